"""A tool result's images counted and shown: each family's tokenizer counts them as its wire
carries them (Anthropic's rule for an image; OpenAI's line of text in its place), the context
inspector lists them on the message part and the parts still sum to the total, and the request's
fingerprint changes with an image."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import fingerprint, images
from harness.deps import StackConfig
from harness.inspect import inspect
from harness.messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock
from harness.providers import openai_wire
from harness.providers.scripted import ScriptedModel
from harness.stack import default_stack
from harness.state import State
from harness.tokens.base import ESTIMATE
from harness.tokens.tokenizers import tokenizer_for
from tests.support.harness import make_agent, make_loop
from tests.support.images import image, jpeg, png_image

SHOT = png_image(640, 480)  # 410 tokens by Anthropic's rule
DIAGRAM = image(jpeg(300, 150), "image/jpeg")  # 60
RESULT = ToolResultBlock(tool_use_id="c1", content="two pictures", images=(SHOT, DIAGRAM))
CLAUDE, GPT = "anthropic:claude-sonnet-4-5", "openai:gpt-4o"


def test_an_image_costs_its_rule_on_claude_and_the_estimate():
    assert (images.tokens(SHOT), images.tokens(DIAGRAM)) == (410, 60)
    bare = replace(RESULT, images=())
    for tokenizer in (tokenizer_for(CLAUDE), ESTIMATE):
        assert tokenizer.block(RESULT) == tokenizer.block(bare) + 410 + 60
        assert tokenizer.image(SHOT) == 410


def test_on_openai_an_image_is_the_line_of_text_it_is_sent_as():
    tokenizer = tokenizer_for(GPT)
    sent = openai_wire.tool_result_content(RESULT)
    assert sent == (
        "two pictures\n"
        f"[image/png image, {images.decoded_bytes(SHOT)} bytes, not shown: this model's API "
        "takes no images in tool results]\n"
        f"[image/jpeg image, {images.decoded_bytes(DIAGRAM)} bytes, not shown: this model's "
        "API takes no images in tool results]")
    assert tokenizer.image(SHOT) == 0
    assert tokenizer.block(RESULT) == tokenizer.text("c1") + tokenizer.text(sent)


def history(*shots: ImageBlock) -> list[Message]:
    messages = [Message.user("Show me the page."),
                Message(role="assistant", content=(
                    ToolUseBlock(id="c1", name="screenshot", input={}),)),
                Message(role="user", content=(
                    ToolResultBlock(tool_use_id="c1", content="two pictures", images=shots),)),
                Message.user("What do you see?")]
    return [replace(m, seq=i) for i, m in enumerate(messages, start=1)]


def snapshot(model: str, *shots: ImageBlock):
    agent = make_agent(model=model)
    loop = make_loop(ScriptedModel([]), agent=agent,
                     middlewares=default_stack(StackConfig(agent=agent)))
    tokenizer = tokenizer_for(model)
    return inspect(loop, State(messages=history(*shots)), tokenizer), tokenizer


@pytest.mark.parametrize("model", [CLAUDE, GPT, "scripted:script"])
def test_the_inspector_lists_the_images_and_the_parts_sum_to_the_total(model):
    shown, tokenizer = snapshot(model, SHOT, DIAGRAM)
    part = {p.id: p for p in shown.messages}["message:3"]
    on_openai = model == GPT
    assert [(i.media_type, i.pixels, i.sent) for i in part.images] == [
        ("image/png", (640, 480), not on_openai), ("image/jpeg", (300, 150), not on_openai)]
    assert [i.tokens for i in part.images] == ([0, 0] if on_openai else [410, 60])
    assert part.images[0].line == (
        f"image/png · {images.decoded_bytes(SHOT):,} bytes · 640×480 px · "
        + ("sent as a line of text" if on_openai else "410 tokens"))
    assert part.tokens == tokenizer.message(history(SHOT, DIAGRAM)[2])
    parts = [*shown.system, *shown.tools, *shown.messages]
    assert sum(p.tokens for p in parts) + shown.framing == shown.total_after
    assert shown.total_after == tokenizer.request(shown.request.to_provider_request())
    assert ("this model's API takes no images" in part.content) == on_openai
    assert ('"images"' in part.content) != on_openai
    assert all(p.images == () for p in parts if p is not part)
    without, _ = snapshot(model)
    grown = shown.total_after - without.total_after
    if on_openai:  # the lines, and nothing for the images themselves
        assert grown == tokenizer.text(openai_wire.tool_result_content(RESULT)) - tokenizer.text(
            "two pictures") > 0
    else:
        assert grown == 410 + 60


def test_the_fingerprint_changes_with_an_image():
    def printed(*shots: ImageBlock):
        shown, tokenizer = snapshot(CLAUDE, *shots)
        return {p.part: p for p in fingerprint.of_request(shown.request, tokenizer).parts}

    same, again = printed(SHOT), printed(png_image(640, 480))
    other, none = printed(png_image(640, 481)), printed()
    assert same["message:3"] == again["message:3"]
    assert len({p["message:3"].digest for p in (same, other, none)}) == 3
    assert same["message:3"].tokens - none["message:3"].tokens == 410
    assert same["message:4"] == other["message:4"] == none["message:4"]
