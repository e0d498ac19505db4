"""A tool result's images on each provider's wire, against the local replay servers: Anthropic's
tool_result content list with an image block per image; OpenAI's tool message with a line per
image (chat completions and the count endpoint alike); the scripted model counts them."""

from __future__ import annotations

from dataclasses import replace

from harness import images
from harness.messages import Message, Request, TextBlock, ToolResultBlock, ToolUseBlock
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import ProviderSettings
from harness.providers.openai_compat import OpenAICompatProvider
from harness.providers.scripted import ScriptedModel, text
from harness.tokens.base import ESTIMATE
from tests.support.images import image, jpeg, png_image
from tests.support.replay import wire_json

SHOT = png_image(120, 80)
PHOTO = image(jpeg(400, 300), "image/jpeg")
CALLS = Message(role="assistant", content=(ToolUseBlock(id="c1", name="screenshot", input={}),
                                           ToolUseBlock(id="c2", name="photo", input={})))


def request(model: str, *, text_of_first: str = "the page", is_error: bool = False) -> Request:
    return Request(model=model, messages=(
        Message.user("Look."), CALLS,
        Message(role="user", content=(
            ToolResultBlock(tool_use_id="c1", content=text_of_first, images=(SHOT,),
                            is_error=is_error),
            ToolResultBlock(tool_use_id="c2", content="", images=(PHOTO, SHOT)),
            TextBlock(text="What do they show?")))))


def anthropic(server) -> AnthropicProvider:
    return AnthropicProvider(settings=ProviderSettings(
        anthropic_api_key="test-key", anthropic_base_url=server.url, max_retries=0,
        timeout_seconds=5.0))


def openai(server) -> OpenAICompatProvider:
    return OpenAICompatProvider(settings=ProviderSettings(
        openai_api_key="test-key", openai_base_url=server.url, max_retries=0,
        timeout_seconds=5.0))


def image_block(shot) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": shot.media_type,
                                        "data": shot.data}}


def test_anthropic_sends_an_image_block_per_image_in_the_results_content(server):
    server.reply(200, wire_json("anthropic_message_text.json"))
    server.reply(200, wire_json("anthropic_count_tokens.json"))
    provider = anthropic(server)
    provider.complete(request("claude-sonnet-4-6", is_error=True))
    provider.count_tokens(request("claude-sonnet-4-6", is_error=True))
    for sent in server.requests:
        assert sent.body["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "c1", "is_error": True, "content": [
                {"type": "text", "text": "the page"}, image_block(SHOT)]},
            # No text: no empty text block, which the API refuses.
            {"type": "tool_result", "tool_use_id": "c2", "content": [
                image_block(PHOTO), image_block(SHOT)]},
            {"type": "text", "text": "What do they show?"}]
    assert [s.path for s in server.requests] == ["/v1/messages", "/v1/messages/count_tokens"]


def omitted(shot) -> str:
    return (f"[{shot.media_type} image, {images.decoded_bytes(shot)} bytes, not shown: this "
            "model's API takes no images in tool results]")


def test_openai_sends_a_line_per_image_in_the_tool_message(server):
    server.reply(200, wire_json("openai_completion_text.json"))
    server.reply(200, wire_json("openai_input_tokens.json"))
    provider = openai(server)
    provider.complete(request("gpt-4o", is_error=True))
    provider.count_tokens(request("gpt-4o", is_error=True))
    chat, count = server.requests
    first = f"Error: the page\n{omitted(SHOT)}"
    second = f"{omitted(PHOTO)}\n{omitted(SHOT)}"
    assert chat.body["messages"][2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": first},
        {"role": "tool", "tool_call_id": "c2", "content": second},
        {"role": "user", "content": "What do they show?"}]
    assert "image" not in str(chat.body["messages"][:2])
    # The count endpoint is asked about what the completion is sent.
    assert count.body["input"][-3:] == [
        {"type": "function_call_output", "call_id": "c1", "output": first},
        {"type": "function_call_output", "call_id": "c2", "output": second},
        {"role": "user", "content": "What do they show?"}]
    assert omitted(SHOT) == (f"[image/png image, {images.decoded_bytes(SHOT)} bytes, not shown: "
                             "this model's API takes no images in tool results]")


def test_the_scripted_model_takes_images_and_counts_them():
    model = ScriptedModel([text("I see a page.")])
    with_images = request("script")
    response = model.complete(with_images)
    assert response.message.text == "I see a page."
    assert response.usage.input_tokens == ESTIMATE.request(with_images)
    results = with_images.messages[2]
    bare = Message(role="user", content=tuple(
        replace(b, images=()) if isinstance(b, ToolResultBlock) else b for b in results.content))
    assert ESTIMATE.message(results) - ESTIMATE.message(bare) == (
        2 * images.tokens(SHOT) + images.tokens(PHOTO))
