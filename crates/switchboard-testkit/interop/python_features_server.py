"""An MCP server on the official Python SDK (PyPI `mcp`) whose tools ask the
client for things: sampling, form elicitation, roots; and send progress and
log messages. For the interop tests of the client-side features.

Usage: python python_features_server.py {stdio|streamable-http} [PORT]
With streamable-http it prints `listening on http://127.0.0.1:PORT` to stdout
(the endpoint is /mcp) before the server starts.

Runs on both SDK lines, with the same tool names and result texts as
ts_everything_server.mjs:
* mcp 1.x (`FastMCP`, session era): the tool asks mid-call with a
  standalone server-to-client request (`ctx.elicit`, `create_message`,
  `list_roots`).
* mcp 2.x (`MCPServer`, both eras): the tool declares what it needs with
  `Resolve(...)` markers; on 2026-07-28 the SDK answers the call with
  `resultType: "input_required"` and runs the tool when the client retries
  with `inputResponses`; on 2025-11-25 it sends the same requests mid-call.
  Log messages reach a 2026-07-28 client only when the request's `_meta`
  carries `io.modelcontextprotocol/logLevel`.
"""

import asyncio
import json
import sys
import warnings
from typing import Annotated

from pydantic import BaseModel, Field

try:  # mcp 2.x
    from mcp.server.mcpserver import (
        Context,
        Elicit,
        ElicitationResult,
        ListRoots,
        Resolve,
        Sample,
    )
    from mcp.server.mcpserver import MCPServer as Server

    SDK2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server

    SDK2 = False

from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import CreateMessageResult, ElicitRequestURLParams, ListRootsResult, SamplingMessage, TextContent

# Logging and sampling are deprecated in 2026-07-28 but still served; the
# SDK's warnings would only clutter the test output.
warnings.simplefilter("ignore", DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")

server = Server("switchboard-python-features", instructions="Python SDK client-features interop server.")


class UserInfo(BaseModel):
    """The flat form of `test_elicitation`."""

    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Defaults(BaseModel):
    """One field with a default of each primitive type (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    # A plain `str` with an `enum`: mcp 1.x refuses `Literal` in a form.
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def content_of(outcome) -> dict | None:
    data = getattr(outcome, "data", None)
    return data.model_dump(mode="json") if data is not None else None


def user_response(outcome) -> str:
    return "User response: " + compact({"action": outcome.action, "content": content_of(outcome)})


def defaults_response(outcome) -> str:
    return f"Elicitation completed: action={outcome.action}, content={compact(content_of(outcome) or {})}"


def sampled_response(result: CreateMessageResult) -> str:
    content = result.content[0] if isinstance(result.content, list) else result.content
    answer = content.text if isinstance(content, TextContent) else compact(content.model_dump(mode="json"))
    # 2.x names the field `stop_reason`; 1.x `stopReason`.
    stop = getattr(result, "stop_reason", None) or getattr(result, "stopReason", None) or "none"
    return f"LLM response: {answer} (model: {result.model}, stopReason: {stop})"


def roots_response(result: ListRootsResult) -> str:
    roots = [root.model_dump(mode="json", by_alias=True, exclude_none=True) for root in result.roots]
    return compact({"roots": roots})


def multi_response(who: UserInfo, sampled: CreateMessageResult) -> str:
    return f"Multi: username={who.username}, {sampled_response(sampled)}"


def sampling_messages(prompt: str) -> list[SamplingMessage]:
    return [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]


@server.tool()
def test_simple_text() -> str:
    """Returns a fixed text."""
    return "This is a simple text response for testing."


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 of 100 when the call carries a progressToken."""
    for i, progress in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"step {i + 1} of 3")
    return "Progress complete"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Sends three log messages (info, warning, error) during the call."""
    await ctx.info("log message 1 (info)", logger_name="python-features")
    await ctx.warning("log message 2 (warning)", logger_name="python-features")
    await ctx.error("log message 3 (error)", logger_name="python-features")
    return "Logged 3 messages"


# The -32042 flow: the first call is refused with one URL to visit; the
# "out-of-band" visit completes 300 ms later (announced with
# notifications/elicitation/complete where a channel for it is left: not on
# 2026-07-28), and from then on the tool succeeds.
_authorized = False
_background: set[asyncio.Task] = set()


@server.tool()
async def test_url_elicitation_required(ctx: Context) -> str:
    """Refused with -32042 (URL elicitation required) until the URL flow completes."""
    global _authorized
    if _authorized:
        return "Authorized call succeeded"
    elicitation_id = "py-url-required-1"
    session = ctx.session

    async def complete() -> None:
        global _authorized
        await asyncio.sleep(0.3)
        _authorized = True
        try:
            await session.send_elicit_complete(elicitation_id)
        except Exception:  # no channel left for it (2026-07-28)
            pass

    task = asyncio.get_running_loop().create_task(complete())
    _background.add(task)
    task.add_done_callback(_background.discard)
    raise UrlElicitationRequiredError(
        [
            ElicitRequestURLParams.model_validate(
                {
                    "mode": "url",
                    "message": "Authorize the test app",
                    "url": "https://auth.example.com/authorize?session=python",
                    "elicitationId": elicitation_id,
                }
            )
        ]
    )


if SDK2:

    def _ask_user(message: str) -> Elicit[UserInfo]:
        return Elicit(message, UserInfo)

    def _ask_defaults() -> Elicit[Defaults]:
        return Elicit("Test client default value handling - please accept with defaults", Defaults)

    def _sample(prompt: str) -> Sample:
        return Sample(sampling_messages(prompt), max_tokens=100, system_prompt="You are a test.")

    def _roots() -> ListRoots:
        return ListRoots()

    def _ask_who() -> Elicit[UserInfo]:
        return Elicit("Who is asking?", UserInfo)

    @server.tool()
    async def test_sampling(prompt: str, sampled: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
        """Asks the client to sample an LLM with the prompt; returns its text."""
        return sampled_response(sampled)

    @server.tool()
    async def test_elicitation(
        message: str, answer: Annotated[ElicitationResult[UserInfo], Resolve(_ask_user)]
    ) -> str:
        """Asks the user for a username and email (form elicitation)."""
        return user_response(answer)

    @server.tool()
    async def test_elicitation_sep1034_defaults(
        answer: Annotated[ElicitationResult[Defaults], Resolve(_ask_defaults)],
    ) -> str:
        """Form elicitation whose schema has a default for each primitive type."""
        return defaults_response(answer)

    @server.tool()
    async def test_list_roots(roots: Annotated[ListRootsResult, Resolve(_roots)]) -> str:
        """Lists the client's roots (roots/list)."""
        return roots_response(roots)

    @server.tool()
    async def test_multi_ask(
        prompt: str,
        who: Annotated[UserInfo, Resolve(_ask_who)],
        sampled: Annotated[CreateMessageResult, Resolve(_sample)],
    ) -> str:
        """Needs a form and a sample: one round with two inputRequests on 2026-07-28."""
        return multi_response(who, sampled)

else:

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client to sample an LLM with the prompt; returns its text."""
        result = await ctx.session.create_message(
            messages=sampling_messages(prompt),
            max_tokens=100,
            system_prompt="You are a test.",
            related_request_id=ctx.request_id,
        )
        return sampled_response(result)

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user for a username and email (form elicitation)."""
        return user_response(await ctx.elicit(message, UserInfo))

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Form elicitation whose schema has a default for each primitive type."""
        answer = await ctx.elicit("Test client default value handling - please accept with defaults", Defaults)
        return defaults_response(answer)

    @server.tool()
    async def test_list_roots(ctx: Context) -> str:
        """Lists the client's roots (roots/list)."""
        return roots_response(await ctx.session.list_roots())

    @server.tool()
    async def test_multi_ask(prompt: str, ctx: Context) -> str:
        """Needs a form and a sample, asked one after the other."""
        who = await ctx.elicit("Who is asking?", UserInfo)
        if who.action != "accept":
            raise ValueError(f"elicitation was {who.action}")
        sampled = await ctx.session.create_message(
            messages=sampling_messages(prompt),
            max_tokens=100,
            system_prompt="You are a test.",
            related_request_id=ctx.request_id,
        )
        return multi_response(who.data, sampled)


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
        return
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    if SDK2:
        server.run(transport, host="127.0.0.1", port=port)
    else:
        server.settings.host = "127.0.0.1"
        server.settings.port = port
        server.run(transport)


if __name__ == "__main__":
    main()
