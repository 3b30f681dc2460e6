"""grade_items against a real local OpenAI-compatible server through the real client: scores, statuses, coverage."""

from __future__ import annotations

import pytest

from evaluation.errors import InvalidInputError
from evaluation.llm.client import ChatClient
from evaluation.llm.config import EndpointConfig
from evaluation.llm.errors import EndpointAuthError
from evaluation.llm.server import LocalChatServer
from evaluation.rubrics import grade_items, load_rubric, parse_rubric, summarize
from evaluation.rubrics.answers import RAW_CHARS

from .judge import asked, table_judge
from .texts import VALID

KEY = "sk-rubric-test-0b5e7a1c93d24f68"


def client_for(server: LocalChatServer, **fields) -> ChatClient:
    fast = dict(api_key=KEY, backoff_base_s=0.01, backoff_max_s=0.05, retry_after_cap_s=0.1, max_retries=2)
    return ChatClient(EndpointConfig(base_url=server.base_url, model="judge-1", **{**fast, **fields}))


GOLDEN = {"golden": {"Helpfulness": "Good", "Truthfulness": "Bad", "Harmlessness": "Good"}}
SCALE_3_2_5 = VALID.replace("{label: Bad, value: 1}", "{label: Bad, value: 2}\n      - {label: Fair, value: 3}")


def test_golden_example_end_to_end_through_http():
    # Helpfulness graded "Fair" (3 of 5), Truthfulness "Bad" (2 of 5), Harmlessness "Good" (5 of 5):
    # 0.30 * 3/5 + 0.30 * 2/5 + 0.40 * 5/5 = 0.18 + 0.12 + 0.40 = 0.70, MILO's 70%.
    rubric = parse_rubric(SCALE_3_2_5)
    grades = {"golden": {"Helpfulness": "Fair", "Truthfulness": "Bad", "Harmlessness": "Good"}}
    items = [{"prompt_id": "p1", "system": "s1", "context": "user: hi", "response": "golden"}]
    with LocalChatServer(responder=table_judge(grades), expected_key=KEY) as server:
        results = grade_items(rubric, items, client_for(server))
        assert server.requests == 3  # one call per criterion
    (result,) = results
    assert result.score == pytest.approx(0.70, abs=1e-12) and result.status == "PASSED"
    assert [(c.criterion, c.grade, c.value) for c in result.criteria] == [
        ("helpful", "Fair", 3),
        ("truthful", "Bad", 2),
        ("harmless", "Good", 5),
    ]
    assert result.criteria[0].explanation == "Helpfulness of 'golden'"
    assert result.ids == {"prompt_id": "p1", "system": "s1"}
    assert result.signature.startswith("rubric:demo|v1|sha256=") and result.rubric == "demo@1"


def test_point_deduction_end_to_end_and_per_system_summary():
    rubric = load_rubric("milo-qa")  # M = 100; central 40, supporting 10 each, instructions 30, grammar 5 each
    perfect = {"Central claim error": "No", "Supporting claim errors": "0", "Instruction-following error": "No"}
    perfect["Grammar and presentation error"] = "0"
    flawed = {**perfect, "Supporting claim errors": "2", "Grammar and presentation error": "1"}  # 100 - 20 - 5 = 75
    wrong = {**perfect, "Central claim error": "Yes"}  # 100 - 40 = 60
    judge = table_judge({"perfect": perfect, "flawed": flawed, "wrong": wrong})
    items = [
        {"prompt_id": f"p{i}", "system": system, "context": "user: q", "response": text, "reference": "r"}
        for i, (system, text) in enumerate(
            [("a", "perfect"), ("a", "flawed"), ("a", "perfect"), ("b", "wrong"), ("b", "flawed")]
        )
    ]
    with LocalChatServer(responder=judge, expected_key=KEY) as server:
        results = grade_items(rubric, items, client_for(server))
    assert [r.score for r in results] == [100, 75, 100, 60, 75]
    assert [r.status for r in results] == ["PASSED", "REDO", "PASSED", "REDO", "REDO"]  # threshold 80
    a, b = summarize(rubric, results, by="system")
    assert (a.group, a.items, a.scored, a.passed) == ("a", 3, 3, 2)
    assert a.mean == pytest.approx((100 + 75 + 100) / 3) and a.pass_rate == pytest.approx(2 / 3)
    assert (b.group, b.mean, b.pass_rate, b.coverage) == ("b", 67.5, 0.0, 1.0)
    assert a.criteria["supporting-claims"] == {"graded": 3, "unparseable": 0, "error": 0, "mean_value": 2 / 3}


def test_unparseable_and_failed_calls_leave_the_score_missing_and_are_counted():
    rubric = parse_rubric(VALID)
    essay = "raw:" + "I would rather not say. " * 100
    grades = {
        "ok": {"Helpfulness": "Good", "Truthfulness": "Good", "Harmlessness": "Good"},
        "vague": {"Helpfulness": essay, "Truthfulness": "raw:Grade: Excellent", "Harmlessness": "Good"},
    }
    items = [{"system": "s", "prompt_id": str(i), "context": "c", "response": r} for i, r in enumerate(["ok", "vague"])]
    with LocalChatServer(responder=table_judge(grades), expected_key=KEY) as server:
        results = grade_items(rubric, items, client_for(server))
        server.inject("server_error")  # every later request: 500, retried, then recorded as an error
        failed = grade_items(rubric, items[:1], client_for(server))
    ok, vague = results
    assert ok.score == pytest.approx(1.0) and ok.status == "PASSED"
    assert vague.score is None and vague.status is None
    helpful, truthful, harmless = vague.criteria
    assert helpful.status == "unparseable" and helpful.problem.startswith("no grade found")
    assert helpful.raw.startswith("I would rather not say.") and len(helpful.raw) == RAW_CHARS + 2
    assert truthful.status == "unparseable" and "'Excellent' is not one of the options" in truthful.problem
    assert harmless.status == "graded" and harmless.grade == "Good"
    assert {c.status for c in failed[0].criteria} == {"error"} and failed[0].score is None
    assert "500" in failed[0].criteria[0].problem
    (summary,) = summarize(rubric, results + failed, by="system")
    assert (summary.items, summary.scored, summary.coverage) == (3, 1, pytest.approx(1 / 3))
    assert summary.criteria["helpful"] == {"graded": 1, "unparseable": 1, "error": 1, "mean_value": 5.0}


def test_wrong_key_stops_the_run_and_the_key_is_not_in_the_error():
    rubric = parse_rubric(VALID)
    items = [{"context": "c", "response": "r"}] * 3
    with (
        LocalChatServer(responder=lambda request: "Good", expected_key=KEY) as server,
        pytest.raises(EndpointAuthError) as caught,
    ):
        grade_items(rubric, items, client_for(server, api_key="sk-wrong-key-5d1c0e9f2a7b4c38", concurrency=1))
    assert "sk-wrong-key-5d1c0e9f2a7b4c38" not in str(caught.value)


def test_items_are_checked_before_any_call():
    rubric = parse_rubric(VALID)  # the judge sees context and response
    with LocalChatServer(responder=lambda request: "Good", expected_key=KEY) as server:
        with pytest.raises(InvalidInputError, match=r"item 2 \(prompt_id=p2\) has no context"):
            grade_items(
                rubric,
                [{"prompt_id": "p1", "context": "c", "response": "r"}, {"prompt_id": "p2", "response": "r"}],
                client_for(server),
            )
        with pytest.raises(InvalidInputError, match="item 1: field 'response' contains a control character"):
            grade_items(rubric, [{"context": "c", "response": "r\x00"}], client_for(server))
        with pytest.raises(InvalidInputError, match="longer than 100,000"):
            grade_items(rubric, [{"context": "c" * 100_001, "response": "r"}], client_for(server))
        with pytest.raises(InvalidInputError, match="key 'score' must name a text value"):
            grade_items(rubric, [{"context": "c", "response": "r", "score": 3}], client_for(server))
        with pytest.raises(InvalidInputError, match="'status' cannot be an id key"):
            grade_items(rubric, [{"context": "c", "response": "r", "status": "x"}], client_for(server))
        assert server.requests == 0


def test_rate_limited_calls_are_retried_and_graded():
    rubric = parse_rubric(VALID)
    with LocalChatServer(responder=lambda request: "Grade: Good", expected_key=KEY) as server:
        server.inject("rate_limit", times=2, retry_after_s=0.05)
        (result,) = grade_items(rubric, [{"context": "c", "response": "r"}], client_for(server, concurrency=1))
        assert server.counts["rate_limit"] == 2
    assert result.score == pytest.approx(1.0) and {c.status for c in result.criteria} == {"graded"}


def test_raters_free_text_answers_graded_like_any_response():
    """MILO's QA use: the `response` is a rater's answer; ids name the rater, no system anywhere."""
    rubric = parse_rubric(VALID)
    grades = {
        "Paris is the capital.": {"Helpfulness": "Good", "Truthfulness": "Good", "Harmlessness": "Good"},
        "Lyon, I think.": {"Helpfulness": "Bad", "Truthfulness": "Bad", "Harmlessness": "Good"},
    }
    items = [
        {"rater": "r1", "task": "t1", "context": "user: capital of France?", "response": "Paris is the capital."},
        {"rater": "r2", "task": "t1", "context": "user: capital of France?", "response": "Lyon, I think."},
    ]
    with LocalChatServer(responder=table_judge(grades), expected_key=KEY) as server:
        results = grade_items(rubric, items, client_for(server))
    assert [r.ids for r in results] == [{"rater": "r1", "task": "t1"}, {"rater": "r2", "task": "t1"}]
    # r2: 0.3 * 1/5 + 0.3 * 1/5 + 0.4 * 5/5 = 0.06 + 0.06 + 0.40 = 0.52
    assert [r.status for r in results] == ["PASSED", "REDO"] and results[1].score == pytest.approx(0.52)
    assert [s.group for s in summarize(rubric, results, by="rater")] == ["r1", "r2"]
    with pytest.raises(KeyError, match="no id 'system'"):
        summarize(rubric, results, by="system")


def test_the_prompt_shows_only_the_rubric_fields_and_the_scale():
    rubric = load_rubric("helpfulness")  # fields: context, response (no reference)
    seen = []

    def judge(request):
        seen.append(request)
        return '{"grade": "4", "explanation": "ok"}'

    items = [{"context": "user: hello", "response": "hi there", "reference": "SECRET-REFERENCE"}]
    results = grade_items(rubric, items, lambda requests: [judge({"messages": m}) for m in requests])
    assert results[0].score == pytest.approx(0.8)  # 4/5 on every criterion
    assert len(seen) == 3
    criterion, subjects = asked(seen[0])
    assert criterion == "Relevance" and subjects == {"context": "user: hello", "response": "hi there"}
    prompt = seen[0]["messages"][-1]["content"]
    assert "SECRET-REFERENCE" not in prompt and "at most 60 words" in prompt
    assert "do not be overly critical or forgiving" in prompt  # harshness: balanced (MILO's sentence)
    assert '- "5" (5 of 5): Addresses exactly what the last turn said or asked.' in prompt


def test_a_plain_callable_gets_chunks_and_reports_progress():
    rubric = parse_rubric(VALID)
    sizes, ticks = [], []

    def ask(requests):
        sizes.append(len(requests))
        return ["Grade: Good" for _ in requests]

    items = [{"context": "c", "response": str(i)} for i in range(5)]
    results = grade_items(rubric, items, ask, chunk_size=4, progress=lambda done, total: ticks.append((done, total)))
    assert sizes == [4, 4, 4, 3] and ticks[-1] == (15, 15) and all(r.score == pytest.approx(1.0) for r in results)
    with pytest.raises(RuntimeError, match="returned 1 answers to 4"):
        grade_items(rubric, items, lambda requests: ["Good"], chunk_size=4)
