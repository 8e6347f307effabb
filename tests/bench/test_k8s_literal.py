"""Every value j0 places in a Kubernetes container's `command`, `args` or `env` reaches the
process as given: Kubernetes expands `$(VAR)` there from the container's environment (so a
TARGET_MODEL of `$(HF_TOKEN)` put the token into the pod's log and OUT/k8s/prepare.log), and
`$$` is its escape. And a value is checked as what it is before it is placed: a model id or a
drafter repo that huggingface_hub's validator refuses is refused (exit 64), naming the knob.

The expansion here is our reading of Kubernetes' rules (its docs: "Variable references
$(VAR_NAME) are expanded using the container's environment. ... Escaped references will never be
expanded, regardless of whether the variable exists or not", `$$` being the escape), written for
this test, independent of the code under test. No cluster: the manifests as rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.bench.matrix.k8s import render as k8s_render
from j0.bench.matrix.k8s.plan import BenchOptions, build_plan
from j0.bench.matrix.settings import matrix_settings
from j0.cli import main as j0_main
from j0.compose.server import ServerKnobs, server_setting
from j0.errors import USAGE, J0Error
from j0.kube import serving as kube_serving
from j0.pins import Pins

ENV = {"HF_TOKEN": "hf_SECRET_expanded", "HOME": "/home/j0"}


def kubernetes_expand(text: str, env: dict[str, str]) -> str:
    """`text` as the kubelet passes it to the process (Kubernetes' expansion rules)."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            out.append(text[i])
            i += 1
        elif text[i + 1] == "$":  # the escape: one literal $
            out.append("$")
            i += 2
        elif text[i + 1] == "(":
            end = text.find(")", i + 2)
            if end < 0:  # no closing parenthesis: the rest as it is
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append(text[i : i + 2])
            i += 2
    return "".join(out)


def containers(value: Any) -> list[dict[str, Any]]:
    """Every container (a dict with an image and a name) anywhere in `value`."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if "image" in value and "name" in value:
            found.append(value)
        for item in value.values():
            found += containers(item)
    elif isinstance(value, list):
        for item in value:
            found += containers(item)
    return found


def as_run(container: dict[str, Any]) -> list[str]:
    """What the container's process gets: its command and args, expanded."""
    words = [*container.get("command", []), *container.get("args", [])]
    return [kubernetes_expand(w, ENV) for w in words]


def matrix_docs(pins: Pins, knobs: ServerKnobs) -> dict[str, dict[str, Any]]:
    settings_ = matrix_settings("7", "on", prefix_caching=False)
    lines = [json.dumps({"id": "p0", "prompt": "p"})]
    plan = build_plan("j0-matrix-test", settings_, knobs, 1, BenchOptions(None, 1, 8), lines)
    options = k8s_render.K8sOptions(image="registry.example/j0:test", namespace="bench")
    return k8s_render.matrix_manifests(pins, knobs, plan, options, parallelism=1)


knob_text = st.lists(
    st.sampled_from(["$", "(", ")", "$(HF_TOKEN)", "$$", "a", "HOME", "0.9", " "]), max_size=8
).map(lambda parts: "".join(parts) or "auto")


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(knob_text, knob_text, knob_text)
def test_every_value_reaches_the_server_as_given(
    pins: Pins, max_len: str, kv_dtype: str, utilisation: str
) -> None:
    knobs = ServerKnobs(pins.target_model, max_len, kv_dtype, utilisation)
    wanted = server_setting(kube_serving.SERVING_SETTING, knobs).args()
    serving = kube_serving.serving_manifests(pins, knobs, "registry.example/j0:test")
    (server,) = [c for c in containers(serving) if c["name"] == "vllm"]
    assert as_run(server) == ["j0", "serve", "--", *wanted]
    values = kube_serving.helm_values(pins, knobs, "registry.example/j0:test")
    extra = values["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["extraArgs"]
    helm = server_setting(
        kube_serving.SERVING_SETTING, knobs, drafter_dir=kube_serving.HELM_DRAFTER
    ).args()
    port = helm.index("--port")  # the chart adds the model, the port and prefix caching itself
    helm = [w for w in helm[1:port] + helm[port + 2 :] if "prefix-caching" not in w]
    assert [kubernetes_expand(w, ENV) for w in extra] == helm
    model = values["servingEngineSpec"]["modelSpec"][0]["modelURL"]
    assert kubernetes_expand(model, ENV) == pins.target_model
    for container in containers(serving) + containers(matrix_docs(pins, knobs)):
        for entry in container.get("env", []):
            if "value" in entry:
                assert kubernetes_expand(entry["value"], ENV) == entry["value"].replace("$$", "$")
        assert "hf_SECRET_expanded" not in " ".join(as_run(container))


@pytest.mark.parametrize("model", ["$(HF_TOKEN)", "../x", "a/b/c", "org/name with space", ""])
def test_a_target_model_that_is_not_a_model_id_is_refused(pins: Pins, model: str) -> None:
    knobs = ServerKnobs(model)
    for render in (
        lambda: kube_serving.serving_manifests(pins, knobs, "registry.example/j0:test"),
        lambda: matrix_docs(pins, knobs),
    ):
        with pytest.raises(J0Error) as refused:
            render()
        assert refused.value.exit_code == USAGE
        assert f"TARGET_MODEL {model!r}" in str(refused.value)
        assert "expected a Hugging Face model id" in str(refused.value)


def test_a_drafter_repo_that_is_not_a_repo_id_is_refused(pins: Pins) -> None:
    from dataclasses import replace

    bad = replace(pins, drafter_repo="$(HF_TOKEN)/x")
    with pytest.raises(J0Error, match=r"DRAFTER_REPO '\$\(HF_TOKEN\)/x'") as refused:
        kube_serving.serving_manifests(bad, ServerKnobs(pins.target_model), "r.example/j0:t")
    assert refused.value.exit_code == USAGE


def test_the_matrix_refuses_a_target_model_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--dry-run` exit 0, the prepare Job's args holding `$(HF_TOKEN)`."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("TARGET_MODEL", "$(HF_TOKEN)")
    code = j0_main(
        ["bench", "matrix", "--backend", "k8s", "--out", str(tmp_path / "out"), "--dry-run",
         "--dataset", "synthetic:40,80", "--requests", "2", "--max-tokens", "8"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == USAGE, err
    assert "TARGET_MODEL '$(HF_TOKEN)'" in err
    assert not (tmp_path / "out" / "k8s" / "matrix.yaml").exists()
