"""A bounded schemathesis run over the whole OpenAPI document, on SQLite and PostgreSQL, as anonymous, researcher
and admin: every operation gets a few valid and a few invalid requests (schemathesis's positive and negative
generation), and none may answer 5xx. `scripts/fuzz_api.py` runs the large version against a real server."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from tests.hub.seeded_hub import seeded_hub

IDENTITIES = ("anonymous", "researcher", "admin")
POSITIVE_EXAMPLES = 2  # per operation, identity and database
NEGATIVE_EXAMPLES = 2  # per operation and database (as admin, who gets furthest), where something can be invalid


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def api_schema(request, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        # mail on (to a port nobody listens on: nothing is sent inside a request), so password-reset requests are
        # answered as on a hub that sends mail rather than with their documented 503 "this hub sends no e-mail"
        patch.setenv("HUB_SMTP_HOST", "127.0.0.1")
        patch.setenv("HUB_SMTP_PORT", "1")
        with seeded_hub(request.param, tmp_path_factory) as (_, tokens, _, app):
            yield schemathesis.openapi.from_asgi("/openapi.json", app), tokens


def requests_for(operation, mode, examples: int, headers: dict, identity: str, calls: list, errors: list):
    """A Hypothesis test that sends `examples` generated requests of `operation` and records the answers."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case):
        response = case.call(headers=headers)
        calls.append(response.status_code)
        if response.status_code >= 500:
            errors.append(f"{identity}: {case.as_curl_command()} -> {response.status_code}")

    return send


def can_be_invalid(operation) -> bool:
    """A body or a typed parameter: plain strings in the path or query have no invalid values worth the search."""
    typed = any(p.definition.get("schema", {}).get("type") not in (None, "string") for p in operation.iter_parameters())
    return typed or bool(list(operation.body))


def test_no_operation_answers_5xx(api_schema):
    schema, tokens = api_schema
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    calls: list[int] = []
    errors: list[str] = []
    for operation in operations:
        for identity in IDENTITIES:
            headers = {"Authorization": f"Bearer {tokens[identity]}"} if identity in tokens else {}
            requests_for(operation, GenerationMode.POSITIVE, POSITIVE_EXAMPLES, headers, identity, calls, errors)()
        if can_be_invalid(operation):
            headers = {"Authorization": f"Bearer {tokens['admin']}"}
            requests_for(operation, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES, headers, "admin", calls, errors)()
    assert not errors, "\n".join(errors)
    assert len(calls) >= 2 * len(operations) * len(IDENTITIES)
    assert any(400 <= code < 500 for code in calls) and any(code < 300 for code in calls)
