"""harness.images: the size read from each format's header, Anthropic's token rule, and which
images of a tool result are kept, relabelled or replaced by a line of text."""

from __future__ import annotations

import base64
import os

import pytest

from harness import images
from harness.images import MAX_IMAGE_CHARS, MAX_IMAGE_TOKENS, MAX_RESULT_IMAGE_CHARS, Pixels
from harness.messages import ImageBlock
from harness.tools import ToolResult
from tests.support.images import gif, image, jpeg, png, png_image, webp

SIZES = {
    "png": (image(png(640, 480)), "image/png"),
    "gif": (image(gif(320, 200), "image/gif"), "image/gif"),
    "jpeg": (image(jpeg(1024, 768), "image/jpeg"), "image/jpeg"),
    "jpeg after 70 kB of metadata": (image(jpeg(1024, 768, metadata=70_000), "image/jpeg"),
                                     "image/jpeg"),
    "webp VP8X": (image(webp(800, 600), "image/webp"), "image/webp"),
    "webp VP8L": (image(webp(800, 600, kind="VP8L"), "image/webp"), "image/webp"),
    "webp VP8": (image(webp(800, 600, kind="VP8 "), "image/webp"), "image/webp"),
}
EXPECTED = {"png": (640, 480), "gif": (320, 200), "jpeg": (1024, 768),
            "jpeg after 70 kB of metadata": (1024, 768), "webp VP8X": (800, 600),
            "webp VP8L": (800, 600), "webp VP8": (800, 600)}


@pytest.mark.parametrize("name", SIZES)
def test_the_size_is_read_from_each_formats_header(name):
    block, kind = SIZES[name]
    assert images.pixels(block) == Pixels(*EXPECTED[name])
    assert images.sendable(block) == block and block.media_type == kind


@pytest.mark.parametrize(("size", "tokens"), [
    ((200, 100), 27),        # 20,000 px / 750, rounded up
    ((1000, 1000), 1334),    # within both limits: not scaled
    ((3000, 2000), 1599),    # scaled to about 1,600 tokens, its aspect kept
    ((4000, 100), 82),       # scaled to a 1,568 px long edge: 1568 × 39 px
])
def test_tokens_follow_anthropics_rule(size, tokens):
    assert images.tokens(image(png(*size))) == tokens


def test_an_image_whose_size_cannot_be_read_counts_the_most_an_image_costs():
    unreadable = ImageBlock(media_type="image/png", data=base64.b64encode(b"not a png").decode())
    assert images.pixels(unreadable) is None
    assert images.tokens(unreadable) == MAX_IMAGE_TOKENS == 1_600


def test_decoded_bytes_are_told_from_the_base64_length():
    for raw in (b"", b"a", b"ab", b"abc", png(3, 3)):
        assert images.decoded_bytes(image(raw)) == len(raw)


def test_admit_keeps_what_can_be_sent_and_says_what_it_left_out():
    big = png(10, 10) + os.urandom(MAX_IMAGE_CHARS // 4 * 3 + 3)  # just past the limit
    result = ToolResult(content="Here is the page.", images=(
        png_image(),
        image(jpeg(50, 40), "image/png"),  # labelled wrong: sent as what it is
        ImageBlock(media_type="image/svg+xml", data=base64.b64encode(b"<svg/>").decode()),
        ImageBlock(media_type="image/png", data="not base64!"),
        image(big),
        image(png(9000, 2)),
    ))
    admitted = images.admit(result)
    assert admitted.images == (png_image(), image(jpeg(50, 40), "image/jpeg"))
    assert admitted.content.splitlines() == [
        "Here is the page.",
        "[image/svg+xml image not shown: its data is not a PNG, JPEG, GIF or WebP image]",
        "[image/png image not shown: its data is not base64]",
        f"[image/png image, {len(big)} bytes not shown: over the limit of {MAX_IMAGE_CHARS} "
        "characters of base64 an image may have]",
        "[image/png image, 9000×2 pixels not shown: wider or taller than 8000 pixels]",
    ]
    assert not admitted.is_error


def test_a_result_keeps_at_most_eight_images_and_8_mib_of_them():
    many = ToolResult(content="", images=tuple(image(png(10 + i, 10)) for i in range(10)))
    admitted = images.admit(many)
    assert admitted.images == many.images[:8]
    over = f"a tool result keeps at most 8 images and {MAX_RESULT_IMAGE_CHARS} characters"
    assert len(admitted.content.splitlines()) == 2 and over in admitted.content
    # Three images of 3.5 MiB of base64 each: two fit in 8 MiB, the third does not.
    large = image(png(20, 20) + os.urandom(int(3.5 * 1024 * 1024) // 4 * 3))
    heavy = images.admit(ToolResult(content="pages", images=(large, large, large)))
    assert heavy.images == (large, large)
    assert heavy.content.splitlines()[0] == "pages" and over in heavy.content


def test_admit_leaves_a_result_without_images_alone_and_takes_mime_line_breaks():
    plain = ToolResult(content="text")
    assert images.admit(plain) is plain
    data = png_image().data
    wrapped = ImageBlock(media_type="image/png",
                         data="\n".join(data[i:i + 76] for i in range(0, len(data), 76)))
    admitted = images.admit(ToolResult(content="", images=(wrapped,)))
    assert admitted == ToolResult(content="", images=(png_image(),))
    only_refused = images.admit(ToolResult(content="", images=(
        ImageBlock(media_type="image/bmp", data="Qk0="),)))
    assert only_refused == ToolResult(
        content="[image/bmp image not shown: its data is not a PNG, JPEG, GIF or WebP image]")


def test_a_posted_image_is_refused_rather_than_changed():
    assert images.problem(png_image()) is None
    assert images.problem(image(gif(1, 1), "image/png")) == (
        "image/png image: its data is image/gif")
    assert images.problem(ImageBlock(media_type="image/png", data="x")) == (
        "image/png image: its data is not base64")


def test_data_outside_ascii_is_not_base64_rather_than_an_error():
    # binascii raises ValueError, not binascii.Error, for it: a posted message answered 500.
    assert images.problem(ImageBlock(media_type="image/webp", data="r|\u00b4y")) == (
        "image/webp image: its data is not base64")
