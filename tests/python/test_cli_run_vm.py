"""`irqlab run` on the thesis's VM scenarios: the virtualization layer's
fields in --json and in the text table, and the scenario's [vm] section
validated. Every test here simulates (needs_run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import irqlab

pytestmark = pytest.mark.needs_run

THESIS = Path(__file__).resolve().parents[2] / "scenarios" / "thesis"
SHORT = ("--set", "run.duration_s=0.01", "--set", "run.warmup_s=0.002")
VM_FIELDS = {"kind", "vm_exits_per_s", "virtual_irqs_per_s", "halts_per_s", "halt_poll_success_pct", "host_cpu_pct"}


@pytest.mark.parametrize(
    ("name", "profile", "kind"),
    [
        ("passthrough", "no-coalescing", "passthrough"),
        ("sriov", "adaptive-coalescing", "sriov"),
        ("virtio-aligned", "irq-suspend", "virtio"),
        ("virtio-packed", "busy-wait", "virtio"),
    ],
)
def test_vm_runs_report_their_layer(name: str, profile: str, kind: str) -> None:
    r = irqlab("run", str(THESIS / f"{name}.toml"), "--profile", profile, "--json", *SHORT)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    vm = s["vm"]
    assert VM_FIELDS <= set(vm), vm
    assert vm["kind"] == kind
    host = vm["host_cpu_pct"]
    assert abs(sum(host.values()) - 100.0) < 1e-6
    assert host.get("guest", 0.0) > 0.0, "the host's vCPU cores run guest mode"
    assert s["requests_completed"] > 0
    if kind == "virtio":
        assert vm["tx_kicks_per_s"] is not None
    if name == "virtio-packed":
        assert vm["host_irq_cores_cpu_pct"] is not None


def test_the_text_table_shows_the_vm_lines() -> None:
    r = irqlab("run", str(THESIS / "passthrough.toml"), "--profile", "no-coalescing", *SHORT)
    assert r.returncode == 0, r.stderr
    for label in ("vm ", "host vcpu cores cpu (%)", "vm exits/s", "virtual irqs/s", "vcpu halts/s", "steal"):
        assert label in r.stdout, label
    bare = irqlab("run", str(THESIS / "bare-metal.toml"), *SHORT)
    assert bare.returncode == 0, bare.stderr
    assert "vm exits/s" not in bare.stdout and "steal" not in bare.stdout
    assert '"vm"' not in irqlab("run", str(THESIS / "bare-metal.toml"), "--json", *SHORT).stdout


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("vm.kind=hyperv", "vm.kind"),
        ("vm.vcpus=2", "vm.vcpus"),
        ("vm.halt_poll_ns=-5", "vm.halt_poll_ns"),
        ("vm.host_nic_coalescing=fast", "vm.host_nic_coalescing"),
        ("vm.vhost_core=99", "vm.vhost_core"),
    ],
)
def test_bad_vm_settings_are_one_sentence_naming_the_field(setting: str, field: str) -> None:
    r = irqlab("run", str(THESIS / "virtio-aligned.toml"), "--set", setting, *SHORT)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert field in r.stderr
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_virtio_run_says_whose_irqs_and_dim_it_shows() -> None:
    # issue 62, item 17: a DIM table beside the warning that coalescing has
    # no effect in the guest, and "irqs/s" beside "virtual irqs/s", unlabelled.
    r = irqlab("run", str(THESIS / "virtio-packed.toml"), "--profile", "adaptive-coalescing", *SHORT)
    assert r.returncode == 0, r.stderr
    assert "no effect in the guest" in r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("host nic dim rx (% time)") for line in lines), r.stdout
    assert not any(line.startswith("dim ") for line in lines), r.stdout
    assert any(line.startswith("host nic irqs/s") and "physical: the host NIC's" in line for line in lines)
    assert any(line.startswith("guest virtual irqs/s") and "injected into the guest" in line for line in lines)
