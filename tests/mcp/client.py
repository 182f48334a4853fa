"""Drives cairn's /mcp with the official MCP Python SDK (streamable HTTP), as an agent would.
Works with both majors of the SDK: 1.x (`ClientSession` over `streamablehttp_client`) and 2.x
(`Client` over `streamable_http_client` with an `httpx2` client carrying the key).

Usage: client.py URL KEY PROJECT SESSION_ID. Prints one JSON object with what it saw (and the
SDK's version); exits non-zero when the server does not behave. Called by tests/api/mcp.rs.
"""
import asyncio
import contextlib
import importlib.metadata
import json
import sys

SDK_VERSION = importlib.metadata.version("mcp")


@contextlib.asynccontextmanager
async def connect(url: str, key: str):
    """Yields (server name, an object with `list_tools` and `call_tool`)."""
    headers = {"Authorization": f"Bearer {key}"}
    if int(SDK_VERSION.split(".")[0]) >= 2:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            yield client.server_info.name, client
    else:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(url, headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield init.serverInfo.name, session


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def input_schema(tool) -> dict:
    return getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)


async def main(url: str, key: str, project: str, session_id: str) -> dict:
    seen: dict = {"sdk": SDK_VERSION}
    async with connect(url, key) as (server_name, session):
            seen["server"] = server_name
            tools = (await session.list_tools()).tools
            seen["tools"] = {t.name: {"description": t.description, "schema": input_schema(t)} for t in tools}

            async def call(name: str, args: dict) -> dict:
                result = await session.call_tool(name, args)
                text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                return {"is_error": is_error(result), "text": text}

            seen["record_decision"] = await call("record_decision", {
                "session_id": session_id,
                "subject": "http client",
                "choice": "reqwest",
                "rationale": "already a dependency; rustls",
                "alternatives": ["hyper directly", "ureq"],
            })
            seen["remember"] = await call("remember", {
                "kind": "lesson", "content": "Neo4j 5 needs IF NOT EXISTS on every schema statement."})
            seen["bad_remember"] = await call("remember", {"kind": "gossip", "content": "x"})
            seen["other_project"] = await call("list_beliefs", {"project": project + "-other"})
            seen["list_beliefs"] = await call("list_beliefs", {})
            seen["get_handover"] = await call("get_handover", {"budget_tokens": 500})
            seen["reconstruct_session"] = await call("reconstruct_session", {"session_id": session_id})
            seen["search_sessions"] = await call("search_sessions", {"query": "testing"})
            # The turn index is eventually consistent: wait for the decision just recorded.
            for _ in range(300):
                seen["search_memory"] = await call(
                    "search_memory", {"query": "reqwest rustls", "types": ["decision"], "limit": 5})
                if seen["search_memory"]["is_error"] or json.loads(seen["search_memory"]["text"])["operations"]:
                    break
                await asyncio.sleep(0.2)
            seen["bad_search_memory"] = await call("search_memory", {"query": "x", "types": ["bogus"]})
            seen["get_context"] = await call("get_context", {"session_id": session_id, "budget_tokens": 300})
            seen["get_knowledge"] = await call("get_knowledge", {"files": ["src/http.rs"], "budget_tokens": 200})
            seen["bad_context"] = await call("get_context", {"budget_tokens": 300})
    return seen


if __name__ == "__main__":
    out = asyncio.run(main(*sys.argv[1:5]))
    print(json.dumps(out))
