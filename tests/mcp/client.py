"""Drives cairn's /mcp with the official MCP Python SDK (streamable HTTP), as an agent would.

Usage: client.py URL KEY PROJECT SESSION_ID. Prints one JSON object with what it saw; exits
non-zero when the server does not behave. Called by tests/api/mcp.rs.
"""
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, key: str, project: str, session_id: str) -> dict:
    seen: dict = {}
    headers = {"Authorization": f"Bearer {key}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.serverInfo.name
            tools = (await session.list_tools()).tools
            seen["tools"] = {t.name: {"description": t.description, "schema": t.inputSchema} for t in tools}

            async def call(name: str, args: dict) -> dict:
                result = await session.call_tool(name, args)
                text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                return {"is_error": bool(result.isError), "text": text}

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
