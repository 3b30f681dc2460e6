"""Endpoint configuration: per-run files, settings, validation naming the field, and a key that never shows."""

from __future__ import annotations

import json

import pytest

from evaluation.errors import ConfigurationError, InvalidInputError
from evaluation.llm.config import EndpointConfig

SECRET = "sk-config-secret-99d1c0ffee42"


def test_yaml_file_with_key_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", SECRET)
    path = tmp_path / "judge.yaml"
    path.write_text("base_url: http://127.0.0.1:9/v1/\nmodel: gpt-x\napi_key_env: MY_JUDGE_KEY\nconcurrency: 16\n")
    config = EndpointConfig.from_file(path, temperature=0.3)
    assert (config.base_url, config.model, config.concurrency, config.temperature) == (
        "http://127.0.0.1:9/v1",
        "gpt-x",
        16,
        0.3,
    )
    assert config.secret_key() == SECRET
    for shown in (repr(config), str(config), config.model_dump_json(), json.dumps(config.public_dict())):
        assert SECRET not in shown


def test_json_file(tmp_path):
    path = tmp_path / "judge.json"
    path.write_text(json.dumps({"base_url": "https://api.example.org/v1", "model": "m", "max_tokens": 64}))
    assert EndpointConfig.from_file(path).max_tokens == 64


def test_a_key_written_in_the_file_is_refused(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text(f"base_url: http://x/v1\nmodel: m\napi_key: {SECRET}\n")
    with pytest.raises(InvalidInputError, match="'api_key' must not be written in a config file") as info:
        EndpointConfig.from_file(path)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("base_url: ftp://x\nmodel: m\n", "'base_url'.*http"),
        ("base_url: http://x/v1\nmodel: m\nconcurrency: 0\n", "'concurrency'"),
        ("base_url: http://x/v1\nmodel: m\ntemperature: hot\n", "'temperature'"),
        ("base_url: http://x/v1\nmodel: m\ncolour: blue\n", "'colour'"),
        ("base_url: http://x/v1\n", "'model'"),
        ("- a list\n", "must be a mapping"),
        ("base_url: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, message):
    path = tmp_path / "judge.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message) as info:
        EndpointConfig.from_file(path)
    assert str(path) in str(info.value)


def test_missing_key_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    path = tmp_path / "judge.yaml"
    path.write_text("base_url: http://x/v1\nmodel: m\napi_key_env: NOT_SET_ANYWHERE\n")
    with pytest.raises(ConfigurationError, match="NOT_SET_ANYWHERE, which is not set"):
        EndpointConfig.from_file(path)


def test_from_settings(monkeypatch):
    monkeypatch.setenv("CHATEVAL_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("CHATEVAL_LLM_MODEL", "env-model")
    monkeypatch.setenv("CHATEVAL_LLM_API_KEY", SECRET)
    config = EndpointConfig.from_settings(model="override")
    assert (config.base_url, config.model, config.secret_key()) == ("http://127.0.0.1:1/v1", "override", SECRET)
    monkeypatch.delenv("CHATEVAL_LLM_MODEL")
    with pytest.raises(ConfigurationError, match="no endpoint model"):
        EndpointConfig.from_settings()


def test_an_empty_key_variable_means_no_key(monkeypatch):
    monkeypatch.setenv("CHATEVAL_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("CHATEVAL_LLM_MODEL", "m")
    monkeypatch.setenv("CHATEVAL_LLM_API_KEY", "")  # as .env.example leaves it
    assert EndpointConfig.from_settings().api_key is None
