"""What the model reads of an MCP result (harness.mcp.convert) and the names a run gives MCP
tools (harness.mcp.names)."""

from __future__ import annotations

import base64

from mcp_types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from harness.mcp import convert, names
from harness.messages import ImageBlock

PNG = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()


def test_text_blocks_join_and_structured_content_is_not_said_twice():
    result = CallToolResult(content=[TextContent(text='{"a": 1}'), TextContent(text="more")],
                            structured_content={"a": 1})
    assert convert.to_result(result, max_chars=1000).content == '{"a": 1}\n\nmore'
    alone = CallToolResult(content=[], structured_content={"b": [1, 2]})
    assert convert.to_result(alone, max_chars=1000).content == '{"b": [1, 2]}'


def test_an_error_result_stays_an_error_and_an_empty_one_says_so():
    failed = convert.to_result(CallToolResult(content=[TextContent(text="no")], is_error=True),
                               max_chars=10)
    assert failed.is_error and failed.content == "no"
    assert convert.to_result(CallToolResult(content=[]), max_chars=99).content == convert.EMPTY


def test_images_resources_and_links_are_described():
    result = CallToolResult(content=[
        ImageContent(data=PNG, mime_type="image/png"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///a.md", text="# A")),
        EmbeddedResource(resource=BlobResourceContents(uri="file:///b.bin", blob=PNG,
                                                       mime_type="application/pdf")),
        ResourceLink(uri="https://x.test/doc", name="doc", description="The doc."),
    ])
    converted = convert.to_result(result, max_chars=10_000)
    assert converted.images == (ImageBlock(media_type="image/png", data=PNG),)
    assert converted.content.split("\n\n") == [
        "[resource file:///a.md]\n# A",
        "[resource file:///b.bin: application/pdf, 100 bytes, not shown]",
        "[resource link doc <https://x.test/doc>: The doc.]"]


def test_a_result_past_the_hard_limit_is_cut_saying_so():
    content = convert.to_result(CallToolResult(content=[TextContent(text="x" * 50)]),
                                max_chars=20).content
    assert content.startswith("x" * 20 + "\n[cut: the result had 50 characters")


def test_a_valid_name_joins_the_server_s_and_any_other_is_cleaned_and_suffixed():
    assert names.tool_name("docs", "search") == "docs__search"
    cleaned = names.tool_name("docs", "search.v2/all")
    assert cleaned.startswith("docs__search_v2_all_") and len(cleaned) == 26
    assert names.tool_name("docs", "search_v2_all") == "docs__search_v2_all"  # no clash
    long = names.tool_name("a-server-name-of-thirty-chars-", "t" * 128)
    assert len(long) == 64 and long == names.tool_name("a-server-name-of-thirty-chars-",
                                                       "t" * 128)
    assert names.server_of("docs__search") == "docs" and names.server_of("echo") is None
