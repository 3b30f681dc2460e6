"""The OpenAPI document says what the API really does: the error answers of every route, the multipart body of
`POST /api/submissions` (read by hand, so declared explicitly), and only the experiment backends it accepts."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from hub.web.app import create_app

EVERY_ROUTE = {"401", "413", "422", "429", "503"}


@pytest.fixture(scope="module")
def schema():
    return create_app().openapi()


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_every_route_documents_the_errors_any_route_can_give(schema):
    for path, method, operation in operations(schema):
        documented = set(operation["responses"])
        assert documented >= EVERY_ROUTE, (method, path, sorted(documented))
        for code in EVERY_ROUTE:
            content = operation["responses"][code]["content"]["application/json"]["schema"]
            refs = [content.get("$ref", "")] + [c.get("$ref", "") for c in content.get("anyOf", [])]
            assert any(ref.endswith("/ErrorBody") for ref in refs), (method, path, code, content)
    body = resolve(schema, {"$ref": "#/components/schemas/ErrorBody"})
    assert set(body["properties"]) == {"error", "field"}


def test_routes_with_an_id_or_a_name_document_404(schema):
    checked = 0
    for path, method, operation in operations(schema):
        if "{" in path and not path.startswith("/api/admin/users"):  # (users: accounts' own router)
            assert "404" in operation["responses"], (method, path)
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    ("method", "path", "codes"),
    [
        ("post", "/api/submissions", {"409"}),
        ("post", "/api/admin/submissions/{submission_id}/approve", {"403", "404", "409"}),
        ("post", "/api/admin/submissions/{submission_id}/reject", {"403", "404", "409"}),
        ("get", "/api/admin/audit", {"403"}),
        ("post", "/api/experiments", {"403", "404", "409"}),
        ("post", "/api/experiments/{experiment_id}/launch", {"403", "404", "409"}),
        ("post", "/api/rate/{token}/claim", {"403", "404", "409"}),
        ("post", "/api/rate/{token}/assignments/{assignment_id}", {"403", "404", "409"}),
    ],
)
def test_route_specific_errors_are_documented(schema, method, path, codes):
    assert codes <= set(schema["paths"][path][method]["responses"]), sorted(schema["paths"][path][method]["responses"])


def test_submission_upload_documents_its_multipart_body(schema):
    body = schema["paths"]["/api/submissions"]["post"]["requestBody"]
    form = body["content"]["multipart/form-data"]["schema"]
    assert body["required"] and form["required"] == ["name"]
    assert {"name", "description", "paper_url", "code_url", "weights_url", "is_public", "baselines"} <= set(
        form["properties"]
    )
    patterns = form["patternProperties"]
    assert any(p.startswith(r"^responses\[") for p in patterns) and any(p.startswith(r"^loglik\[") for p in patterns)
    assert all(p["format"] == "binary" for p in patterns.values())


def test_experiment_backends_are_only_those_accepted(schema, people):
    form = resolve(schema, schema["paths"]["/api/experiments"]["post"]["requestBody"]["content"]["application/json"])
    backend = resolve(schema, resolve(schema, form["schema"])["properties"]["backend"])
    assert sorted(backend["enum"]) == ["hub", "mturk"]
    client = TestClient(create_app())
    body = {"dataset": "hub-open-v1", "system_a_id": 1, "system_b_id": 2, "backend": "import"}
    response = client.post("/api/experiments", json=body, headers={"Authorization": f"Bearer {people['admin']}"})
    assert response.status_code == 422 and "backend" in str(response.json())
