"""The scripted model: both wire protocols, the script, the record, the request checks."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest

from tests.harness.scripted_model import (
    ScriptedModel,
    ToolCall,
    Turn,
    anthropic_problems,
    call,
    parse_sse,
    reply,
    responses_problems,
    say,
)

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
TOOLS_A = [{"name": "Bash", "input_schema": {"type": "object"}}]
TOOLS_R = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]


def post(model: ScriptedModel, path: str, body: object, **headers: str) -> tuple[int, dict, bytes]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(
        model.url + path, data, {"content-type": "application/json", **headers}
    )
    try:
        with OPENER.open(req) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def messages_body(messages=None, *, stream=True, tools=TOOLS_A):
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "tools": tools,
        "messages": messages or [{"role": "user", "content": "hi"}],
    }


def responses_body(items=None, *, tools=TOOLS_R):
    return {
        "model": "scripted",
        "stream": True,
        "tools": tools,
        "input": items or [{"type": "message", "role": "user", "content": "hi"}],
    }


def assemble_anthropic(events):
    """Rebuild the message from its stream the way a client does."""
    names = [e for e, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    message = events[0][1]["message"]
    blocks: dict[int, dict] = {}
    partial: dict[int, str] = {}
    open_blocks: set[int] = set()
    for name, data in events[1:]:
        if name == "content_block_start":
            assert data["index"] not in blocks
            blocks[data["index"]] = dict(data["content_block"])
            open_blocks.add(data["index"])
        elif name == "content_block_delta":
            assert data["index"] in open_blocks
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                assert delta["type"] == "input_json_delta"
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
        elif name == "content_block_stop":
            open_blocks.remove(data["index"])
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
    assert not open_blocks
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def test_a_streamed_message_carries_text_then_a_tool_call():
    turn = Turn(
        text="Let me run the tests " * 3, calls=(ToolCall("Bash", {"command": "pytest -q"}),)
    )
    with ScriptedModel([turn]) as model:
        status, headers, body = post(model, "/v1/messages?beta=true", messages_body())
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    message = assemble_anthropic(parse_sse(body))
    assert message["role"] == "assistant"
    assert message["stop_reason"] == "tool_use"
    text, tool = message["content"]
    assert text == {"type": "text", "text": turn.text}
    assert tool["type"] == "tool_use"
    assert tool["id"].startswith("toolu_")
    assert (tool["name"], tool["input"]) == ("Bash", {"command": "pytest -q"})


def test_a_non_streamed_message_is_one_object():
    with ScriptedModel([say("done")]) as model:
        status, _h, body = post(model, "/v1/messages", messages_body(stream=False))
    answer = json.loads(body)
    assert status == 200
    assert answer["content"] == [{"type": "text", "text": "done"}]
    assert answer["stop_reason"] == "end_turn"


def test_a_responses_stream_has_ordered_events_and_a_function_call():
    with ScriptedModel([call("exec_command", "running", cmd="ls")]) as model:
        status, _h, body = post(model, "/v1/responses", responses_body())
    assert status == 200
    events = parse_sse(body)
    names = [e for e, _ in events]
    assert names[0] == "response.created"
    assert names[-1] == "response.completed"
    assert [d["sequence_number"] for _e, d in events] == list(range(len(events)))
    assert all(d["type"] == e for e, d in events)
    deltas = "".join(d["delta"] for e, d in events if e == "response.output_text.delta")
    assert deltas == "running"
    done = [d["item"] for e, d in events if e == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "function_call"]
    fc = done[1]
    assert fc["name"] == "exec_command"
    assert json.loads(fc["arguments"]) == {"cmd": "ls"}
    assert fc["call_id"].startswith("call_")
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"] == done
    assert completed["usage"]["total_tokens"] == 15


def test_only_requests_that_offer_tools_play_the_script():
    with ScriptedModel([say("one"), say("two")], side_reply="a title") as model:
        _s, _h, side = post(model, "/v1/messages", messages_body(stream=False, tools=[]))
        _s, _h, first = post(model, "/v1/messages", messages_body(stream=False))
        _s, _h, second = post(model, "/v1/responses", responses_body())
        _s, _h, third = post(model, "/v1/messages", messages_body(stream=False))
    assert json.loads(side)["content"][0]["text"] == "a title"
    assert json.loads(first)["content"][0]["text"] == "one"
    assert "two" in second.decode()
    assert json.loads(third)["content"][0]["text"] == "The script has ended."
    assert model.played == 2
    assert model.overruns == 1
    assert [r.turn for r in model.requests] == [None, 0, 1, None]
    assert [r.loop for r in model.requests] == [False, True, True, True]
    assert len(model.loop_requests) == 3


def test_a_reactive_turn_reads_its_request_and_off_script_answers_do_not_advance():
    def echo(request) -> Turn:
        return say("you said: " + request.body["messages"][-1]["content"])

    with ScriptedModel([reply(echo), say("two")]) as model:
        model.off_script = lambda r: say("summary") if "summarize" in r.text() else None
        _s, _h, first = post(
            model, "/v1/messages", messages_body([{"role": "user", "content": "hi"}], stream=False)
        )
        _s, _h, side = post(
            model,
            "/v1/messages",
            messages_body([{"role": "user", "content": "summarize"}], stream=False),
        )
        _s, _h, second = post(model, "/v1/messages", messages_body(stream=False))
    assert json.loads(first)["content"][0]["text"] == "you said: hi"
    assert json.loads(side)["content"][0]["text"] == "summary"
    assert json.loads(second)["content"][0]["text"] == "two"
    assert [r.turn for r in model.requests] == [0, None, 1]
    assert model.overruns == 0


def test_every_request_is_recorded_with_path_query_headers_and_body():
    with ScriptedModel([say("x")]) as model:
        post(model, "/v1/messages?beta=true", messages_body(), **{"x-api-key": "sk-test"})
        with pytest.raises(urllib.error.HTTPError) as err:
            OPENER.open(model.url + "/v1/models")
        assert err.value.code == 404
        status, _h, body = post(model, "/v1/messages/count_tokens", {"messages": []})
    assert status == 200
    assert json.loads(body)["input_tokens"] >= 1
    first, second, third = model.requests
    assert (first.method, first.path, first.query) == ("POST", "/v1/messages", {"beta": ["true"]})
    assert first.headers["x-api-key"] == "sk-test"
    assert first.body["model"] == "claude-test"
    assert first.tool_names == ["Bash"]
    assert (second.method, second.path, second.body) == ("GET", "/v1/models", None)
    assert third.loop is False


def test_text_finds_words_anywhere_in_the_body():
    with ScriptedModel([say("x")]) as model:
        post(
            model,
            "/v1/messages",
            messages_body(
                [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Stop hook feedback: rung 2"}],
                    }
                ]
            ),
        )
    assert "rung 2" in model.requests[0].text()


def test_requests_are_checked_against_the_documented_shapes():
    with ScriptedModel([say("a"), say("b")]) as model:
        post(
            model,
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 0,
                "tools": [{"name": "agenttask.claimNext", "input_schema": {}}],
                "messages": [{"role": "user", "content": "x"}],
            },
        )
        post(
            model,
            "/v1/responses",
            responses_body(
                [{"type": "function_call_output", "call_id": "call_9", "output": "x"}],
                tools=[*TOOLS_R, *TOOLS_R],
            ),
        )
    assert model.problems == [
        "/v1/messages: max_tokens is not a positive integer",
        "/v1/messages: tool name 'agenttask.claimNext' does not match ^[a-zA-Z0-9_-]{1,64}$",
        "/v1/responses: function_call_output answers 'call_9', which no earlier function_call made",
        "/v1/responses: tool name 'exec_command' is offered twice",
    ]


def test_a_well_formed_conversation_has_no_problems():
    assert (
        anthropic_problems(
            messages_body(
                [
                    {"role": "user", "content": "run it"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
                    },
                ]
            )
        )
        == []
    )
    assert (
        responses_problems(
            responses_body(
                [
                    {"type": "message", "role": "developer", "content": "rules"},
                    {"type": "function_call", "call_id": "c1", "name": "exec_command"},
                    {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                    {"type": "web_search"},
                ],
                tools=[*TOOLS_R, {"type": "web_search"}],
            )
        )
        == []
    )


def test_a_body_over_the_limit_is_refused_before_it_is_read():
    with ScriptedModel() as model:
        port = int(model.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(
                b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 999999999999\r\n\r\n"
            )
            reply = s.recv(200)
    assert reply.startswith(b"HTTP/1.1 413")
    assert model.requests == []


def test_a_namespaced_function_call_names_its_namespace():
    turn = Turn(calls=(ToolCall("agenttask_claimNext", {}, namespace="mcp__agenttask"),))
    namespaced = [
        {"type": "function", "name": "agenttask_claimNext", "parameters": {"type": "object"}},
        {"type": "function", "name": "agenttask.get", "parameters": {"type": "object"}},
    ]
    with ScriptedModel([turn]) as model:
        _s, _h, body = post(
            model,
            "/v1/responses",
            responses_body(
                tools=[{"type": "namespace", "name": "mcp__agenttask", "tools": namespaced}]
            ),
        )
    [item] = [d["item"] for e, d in parse_sse(body) if e == "response.output_item.done"]
    assert (item["namespace"], item["name"]) == ("mcp__agenttask", "agenttask_claimNext")
    request = model.requests[0]
    assert request.tool_names == ["mcp__agenttask"]
    assert set(request.namespace("mcp__agenttask")) == {"agenttask_claimNext", "agenttask.get"}
    assert request.namespace("other") == {}
    assert model.problems == [
        "/v1/responses: in namespace 'mcp__agenttask': tool name 'agenttask.get' does not "
        "match ^[a-zA-Z0-9_-]{1,64}$"
    ]
