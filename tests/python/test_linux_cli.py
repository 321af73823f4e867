"""``irqlab linux`` without a namespace or root: the parser, the refusals
that need no device, the Python API's errors and the text output (from
canned reports shaped as the native module returns them). The live tests are
in test_linux_live.py."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO, irqlab
from irqlab import _core
from irqlab.linux import knobs
from irqlab.linux.cli import apply_text, hand_change_line, knob_name, restore_text, show_text
from irqlab.profiles import profile_knobs

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the real-kernel commands need Linux")

VETH = {
    "device": "veth0",
    "ifindex": 3,
    "napis": [
        {
            "id": 258,
            "irq": None,
            "queues": {"rx": [], "tx": []},
            "pid": None,
            "defer_hard_irqs": 0,
            "gro_flush_timeout": 0,
            "irq_suspend_timeout": 0,
            "threaded": "disabled",
        }
    ],
    "unlinked_queues": {"rx": [0], "tx": [0]},
    "coalesce": None,
    "kernel": {"per_napi_config": True, "irq_suspend_timeout": True, "threaded": True},
}


def _napi_change(knob, before, after):
    return {"part": "napi", "napi_id": 258, "knob": knob, "from": before, "to": after}


def _skip(knob, to):
    return {"part": "coalesce", "napi_id": None, "knob": knob, "to": to, "reason": "not supported by this device"}


APPLIED = {
    "device": "veth0",
    "ifindex": 3,
    "profile": "irq-suspend",
    "napi": None,
    "dry_run": False,
    "changed": [
        _napi_change("defer_hard_irqs", 0, 100),
        _napi_change("gro_flush_timeout", 0, 20000),
        _napi_change("irq_suspend_timeout", 0, 20000000),
    ],
    "unchanged": [],
    "skipped": [_skip("adaptive-rx", True), _skip("rx-usecs", 8), _skip("rx-frames", 128)],
    "state_file": "/run/irqlab/veth0.3.netns-1.json",
    "state_kept": False,
    "warnings": [],
}


def test_show_text_has_a_row_per_napi_and_says_when_coalescing_is_unsupported():
    text = show_text(VETH)
    lines = text.splitlines()
    assert lines[0] == "veth0 (ifindex 3)"
    assert lines[1].split() == [
        "NAPI", "irq", "queues", "pid", "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "threaded",
    ]
    assert lines[2].split() == ["258", "-", "-", "-", "0", "0", "0", "disabled"]
    assert "queues the driver links to no NAPI: rx 0 tx 0" in text
    assert lines[-1] == "coalescing: not supported by this device"


def test_show_text_lists_the_coalescing_a_device_reports():
    report = dict(VETH, coalesce={"adaptive-rx": True, "rx-usecs": 8, "rx-frames": 128}, unlinked_queues={"rx": [], "tx": []})
    report["napis"] = [dict(VETH["napis"][0], irq=45, queues={"rx": [0], "tx": [0]}, pid=900, threaded="enabled")]
    text = show_text(report)
    assert text.splitlines()[2].split() == ["258", "45", "rx", "0", "tx", "0", "900", "0", "0", "0", "enabled"]
    assert text.splitlines()[-1] == "coalescing: adaptive-rx on, rx-usecs 8, rx-frames 128"
    assert "no NAPI" not in text
    assert "NAPI: none" in show_text(dict(VETH, napis=[]))


def test_apply_text_lists_changes_skips_and_the_saved_state():
    text = apply_text(APPLIED)
    assert text.splitlines()[0] == "profile irq-suspend applied to veth0 (ifindex 3):"
    assert "NAPI 258  napi.irq_suspend_timeout   0 ns  ->  20000000 ns" in text
    assert ("skipped: coalescing: coalesce.adaptive-rx true, coalesce.rx-usecs 8, coalesce.rx-frames 128: "
            "not supported by this device") in text
    assert text.splitlines()[-1].startswith("the previous settings are saved in /run/irqlab/veth0.3.netns-1.json")

    dry = apply_text(dict(APPLIED, dry_run=True, state_file=None))
    assert "would change:" in dry.splitlines()[0]
    assert dry.splitlines()[-1] == "nothing was changed (--dry-run)."

    kept = apply_text(dict(APPLIED, state_kept=True, changed=[], unchanged=APPLIED["changed"]))
    assert "every knob was already set" in kept and "earlier apply" in kept
    assert "already set: NAPI 258: napi.napi_defer_hard_irqs 100, napi.gro_flush_timeout 20000 ns" in kept


def test_apply_and_restore_name_every_knob_as_irqlab_profiles_lists_it():
    # One naming everywhere: each knob apply sets or skips is a row of `irqlab profiles`.
    listed = set(profile_knobs()["irq-suspend"])
    for knob in ("defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "adaptive-rx", "rx-usecs", "rx-frames"):
        assert knob_name(knob) in listed, knob
    text = apply_text(APPLIED)
    named = {word for line in text.splitlines() for word in line.replace(",", " ").split() if "." in word[1:-1]}
    named -= {"/run/irqlab/veth0.3.netns-1.json", "/run/irqlab/veth0.3.netns-1.json;"}
    assert named and named <= listed, named - listed
    # The JSON keeps the kernel's and ethtool's names.
    assert knob_name("nosuch") == "nosuch"


def test_restore_text():
    report = {
        "device": "veth0",
        "ifindex": 3,
        "state_file": "/run/irqlab/veth0.3.netns-1.json",
        "profile": "irq-suspend",
        "restored": [_napi_change("defer_hard_irqs", 100, 7)],
        "unchanged": [],
        "skipped": [],
        "warnings": ["defer_hard_irqs of NAPI 258 was set to 7 but reads back as 8"],
    }
    text = restore_text(report)
    assert "NAPI 258  napi.napi_defer_hard_irqs  100  ->  7" in text
    assert "warning: defer_hard_irqs of NAPI 258 was set to 7 but reads back as 8" in text
    assert text.splitlines()[-1] == "removed /run/irqlab/veth0.3.netns-1.json."
    assert "changed since apply" not in text  # no record (an older state file), no claim


def _hand(knob, applied, now, restoring, napi_id=12):
    part = "napi" if napi_id is not None else "coalesce"
    return {"part": part, "napi_id": napi_id, "knob": knob, "applied": applied, "now": now, "restoring": restoring}


def test_a_hand_change_since_apply_is_one_line_naming_the_knob_and_the_three_values():
    assert hand_change_line("irqlab-tb0", _hand("gro_flush_timeout", 20000, 5000, 0)) == (
        "restore: irqlab-tb0 NAPI 12 napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns "
        "(changed since apply); restoring 0 ns"
    )
    assert hand_change_line("eth0", _hand("adaptive-rx", True, False, False, napi_id=None)) == (
        "restore: eth0 coalescing coalesce.adaptive-rx was true when applied, is now false (changed since apply); "
        "it is already at its value from before the apply, false"
    )


def test_restore_text_says_each_hand_change_and_still_lists_the_restore():
    report = {
        "device": "veth0",
        "ifindex": 3,
        "state_file": "/run/irqlab/veth0.3.netns-1.json",
        "profile": "irq-suspend",
        "restored": [_napi_change("gro_flush_timeout", 5000, 0), _napi_change("defer_hard_irqs", 100, 0)],
        "unchanged": [],
        "skipped": [],
        "changed_since_apply": [_hand("gro_flush_timeout", 20000, 5000, 0, napi_id=258)],
        "warnings": [],
    }
    lines = restore_text(report).splitlines()
    assert "  NAPI 258  napi.gro_flush_timeout     5000 ns  ->  0 ns" in lines
    said = [line for line in lines if "changed since apply" in line]
    assert said == ["restore: veth0 NAPI 258 napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns "
                    "(changed since apply); restoring 0 ns"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["linux"], "COMMAND"),
        (["linux", "frob"], "frob"),
        (["linux", "show"], "DEV"),
        (["linux", "apply", "lo"], "--profile"),
        (["linux", "apply", "lo", "--profile", "busy-wait", "--napi", "-3"], "--napi"),
        (["linux", "apply", "lo", "--profile", "busy-wait", "--napi", "4294967296"], "--napi"),
        (["linux", "show", "a/b"], "a/b"),
        (["linux", "show", "irqlab-nosuch"], "irqlab-nosuch"),
        (["linux", "apply", "irqlab-nosuch", "--profile", "busy-wait", "--dry-run"], "irqlab-nosuch"),
        (["linux", "apply", "lo", "--profile", "fast", "--dry-run"], "fast"),
    ],
)
@linux_only
def test_user_errors_are_one_line_and_exit_2(args, needle):
    result = irqlab(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: "), result.stderr
    assert needle in lines[0]
    assert result.stdout == ""


@linux_only
def test_the_api_raises_linux_error_a_runtime_error():
    assert issubclass(knobs.LinuxError, RuntimeError) and knobs.LinuxError is _core.LinuxError
    with pytest.raises(knobs.LinuxError, match="no network device named `irqlab-nosuch`"):
        knobs.show("irqlab-nosuch")
    with pytest.raises(knobs.LinuxError, match="profile `fast` is unknown"):
        knobs.plan("lo", "fast")
    with pytest.raises(ValueError, match="napi"):
        knobs.apply("lo", "busy-wait", napi=-1)
    with pytest.raises(ValueError, match="napi"):
        knobs.plan("lo", "busy-wait", napi=True)


@linux_only
def test_loopback_has_no_napi_to_plan_for():
    report = knobs.show("lo")
    assert report["device"] == "lo" and report["ifindex"] == 1 and report["napis"] == []
    with pytest.raises(knobs.LinuxError, match="`lo` has no NAPI instance"):
        knobs.apply("lo", "irq-suspend", dry_run=True)


def test_help_lists_the_linux_commands():
    result = irqlab("linux", "--help")
    assert result.returncode == 0
    for command in ("show", "apply", "restore"):
        assert command in result.stdout



def _readme_real_server() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## Use it on a real server")
    return " ".join(text[start : text.index("\n## ", start + 1)].split())


@linux_only
def test_show_of_a_device_without_napi_exits_0_as_the_readme_says():
    result = irqlab("linux", "show", "lo")
    assert result.returncode == 0, result.stderr
    assert "NAPI: none" in result.stdout and result.stderr == ""
    readme = _readme_real_server()
    assert "`irqlab linux show lo` prints `NAPI: none` and exits with status 0" in readme
    # The refusals with status 2 do not include showing a device without NAPI.
    start = readme.index("`restore` without root")
    refusals = readme[start : readme.index("exit with status 2", start)]
    assert "`apply` to a device without NAPI" in refusals and "show" not in refusals


def test_the_readme_says_per_napi_settings_are_not_in_the_device_wide_sysfs_files():
    # The live check of the claim is in test_linux_live.py.
    readme = _readme_real_server()
    assert "Per-NAPI settings do not show in the device-wide sysfs files" in readme
    assert "`/sys/class/net/DEV/napi_defer_hard_irqs` and `gro_flush_timeout`" in readme


def test_restore_forget_says_which_state_it_deleted_and_that_the_device_stays_as_it_is():
    # Issue 62, item 2: the way out of a saved state that is refused as not DEV's.
    from irqlab.linux.cli import forget_text

    report = {"device": "veth0", "ifindex": 3, "forgotten": [
        {"state_file": "/run/irqlab/veth0.3.netns-cookie-4097.json", "profile": "busy-wait", "saved_at": 86400},
        {"state_file": "/run/irqlab/veth0.3.netns-4026532174.json", "profile": None, "saved_at": None}]}
    assert forget_text(report).splitlines() == [
        "forgot the state saved by profile busy-wait at 1970-01-02 00:00 UTC: removed "
        "/run/irqlab/veth0.3.netns-cookie-4097.json; veth0 keeps its settings as they are.",
        "forgot an unreadable saved state: removed /run/irqlab/veth0.3.netns-4026532174.json; veth0 keeps its "
        "settings as they are."]
