"""``irqlab testbed run``: measure the profiles on this machine's kernel."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

from irqlab.testbed.machine import machine as _machine
from irqlab.testbed.netns import TestbedError
from irqlab.testbed.usage import TestbedUsageError
from irqlab.tuning import DEFAULT_MIN_EFFECT


def add_testbed_parser(commands: Any) -> None:
    p = commands.add_parser(
        "testbed",
        help="measure the profiles on a veth testbed with memcached (root)",
        description="A two-namespace veth testbed with Debian's memcached and irqlab's load generator.",
        allow_abbrev=False,
    )
    sub = p.add_subparsers(dest="testbed_command", metavar="COMMAND", required=True)
    r = sub.add_parser(
        "run",
        help="measure every profile and compare with the simulator",
        description=(
            "Create namespaces irqlab-tb-srv and irqlab-tb-cli joined by a veth pair on 198.18.0.0/15, run "
            "memcached on one core under each profile and the load generator on the other, and compare with "
            "the simulator's prediction (scenarios/testbed/veth-2core.toml). Needs root; always cleans up."
        ),
        allow_abbrev=False,
    )
    r.add_argument("--profiles", metavar="P[,P...]", help="comma-separated profiles (default: the thesis's four)")
    r.add_argument("--duration", metavar="S", default="3", help="closed-loop seconds per profile (default 3; open loop uses 2/3 of it)")
    r.add_argument("--connections", metavar="C", default="16", help="load-generator connections (default 16)")
    r.add_argument("--low-qps", metavar="Q", default="5000", help="the low open-loop rate (default 5000)")
    r.add_argument("--repeats", metavar="N", default="3",
                   help="measure every profile N times, in a rotated order each time (default 3)")
    r.add_argument("--max-other-cpu", metavar="PCT", default="5",
                   help="flag and measure again when other processes use more than PCT %% of a core (default 5)")
    r.add_argument("--out", metavar="DIR",
                   help="also write testbed.json, testbed.md and a results directory (irqlab report DIR) there")
    r.add_argument("--policy", metavar="FILE.py:CLASS", action="append",
                   help="also measure your own policy (irqlab.policy) as one more row: memcached under "
                        "--policy-profile, the policy run by irqlab linux control around each measurement, and "
                        "simulated the same way; give it again for more policies, a row each")
    r.add_argument("--policy-profile", metavar="P", default="no-coalescing",
                   help="the profile the policies' rows start from (default no-coalescing)")
    r.add_argument("--no-sim", action="store_true", help="skip the simulator's prediction")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(handler=_cmd_run)
    t = sub.add_parser(
        "tune",
        help="irqlab linux tune on the testbed, the measured curve beside the simulator's",
        description=(
            "Run memcached under a profile on the veth testbed, search one per-NAPI knob of the server veth with "
            "irqlab linux tune (the original value is put back), and simulate the same values with "
            "scenarios/testbed/veth-2core.toml rescaled by this machine's probe. Needs root; always cleans up."
        ),
        allow_abbrev=False,
    )
    t.add_argument("--knob", default="gro_flush_timeout", help="defer_hard_irqs, gro_flush_timeout (default) or irq_suspend_timeout")
    t.add_argument("--range", default="0:200000", metavar="LOW:HIGH", help="values to search (default 0:200000)")
    t.add_argument("--objective", default="throughput", choices=("throughput", "p99", "cpu_per_request"))
    t.add_argument("--profile", default="irq-suspend", metavar="P", help="memcached's profile (default irq-suspend)")
    t.add_argument("--slice", default="1", metavar="S", help="seconds of load per step (default 1)")
    t.add_argument("--budget", default="60", metavar="S", help="seconds for the search (default 60)")
    t.add_argument("--min-effect", metavar="FRACTION", default=str(DEFAULT_MIN_EFFECT),
                   help="keep the profile's value unless the best found beats it by more than this fraction of its "
                        f"objective and twice the noise of repeated slices (0 to 0.5, default {DEFAULT_MIN_EFFECT:g})")
    t.add_argument("--out", metavar="DIR", help="also write both curves as a results directory")
    t.add_argument("--no-sim", action="store_true", help="skip the simulator's curve")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(handler=_cmd_tune)
    pr = sub.add_parser(
        "probe",
        help="measure this machine's kernel costs and show the simulator's constants rescaled by them",
        description=(
            "Measure a system call, a loopback TCP message, a same-CPU and a cross-CPU thread wake-up "
            "(irqlab-loadgen --probe) and the clock, and print the testbed scenario's constants rescaled by "
            "them (python/irqlab/testbed/probe.py says how). Sends no load; needs no root."
        ),
        allow_abbrev=False,
    )
    pr.add_argument("--json", action="store_true", help="print one JSON object")
    pr.set_defaults(handler=_cmd_probe)


def _cmd_tune(args: argparse.Namespace) -> int:
    from irqlab.linux.tune_cmd import SLICE_MARGIN_S, TuneError, parse_range
    from irqlab.profiles import PROFILES as ACCEPTED
    from irqlab.testbed.tune import SCENARIO_FIELD, render, run_testbed_tune, write_results
    from irqlab.tuning import parse_min_effect

    if args.knob not in SCENARIO_FIELD:
        raise TestbedUsageError(f"--knob must be one of {', '.join(SCENARIO_FIELD)} on the testbed (got {args.knob!r})")
    if args.profile not in ACCEPTED:
        raise TestbedUsageError(f"--profile must be one of {', '.join(ACCEPTED)} (got {args.profile!r})")
    try:
        low, high = parse_range(args.range, args.knob, 2**31 - 1)
    except TuneError as e:
        raise TestbedUsageError(str(e)) from None
    slice_s = _num(args.slice, "--slice", 0.2, 60)
    # linux tune's own bound, checked here before the testbed is built.
    budget_s = _num(args.budget, "--budget", round(max(3 * slice_s, slice_s + SLICE_MARGIN_S), 6), 3600)
    min_effect = parse_min_effect(args.min_effect, TestbedUsageError)
    out = _results_out(args.out, "testbed tune")
    progress = None if args.json else (lambda m: print(f"testbed: {m}", file=sys.stderr, flush=True))
    try:
        result = run_testbed_tune(args.knob, low, high, args.objective, profile=args.profile, slice_s=slice_s,
                                  budget_s=budget_s, min_effect=min_effect, sim=not args.no_sim, progress=progress)
    except TestbedError as e:
        raise TestbedUsageError(str(e)) from None
    if out is not None:
        write_results(out, result)
    print(json.dumps(result) if args.json else render(result))
    return 0


def _cmd_probe(args: argparse.Namespace) -> int:
    m = _machine()
    if args.json:
        print(json.dumps(m))
        return 0
    p = m["probe"]
    lines = [
        f"clock {p['clock_ghz']:.3f} GHz; getppid {p['syscall_ns']:.0f} ns; loopback TCP message "
        f"{p['tcp_message_ns']:.0f} ns; wake-up and switch {p['switch_ns']:.0f} ns on one CPU, "
        f"{p['remote_wake_ns']:.0f} ns across CPUs; a wake-up from idle takes {p.get('idle_wake_cpu_ns', 0.0):.0f} ns "
        f"of the woken CPU; a line from L2 {p.get('l2_line_ns', 0.0):.1f} ns",
        f"scales: kernel network path x{m['rescaled']['_scales']['kernel_path']:.3f}, "
        f"wake-up and switch x{m['rescaled']['_scales']['switch']:.3f}",
        "",
        "the testbed scenario's constants for this machine:",
    ]
    spread = m.get("rescaled_spread") or {}
    lines += [f"  {k} = {v}" + (f"  ({spread[k][0]:g}-{spread[k][1]:g} over the probe's spread)"
                                if k in spread and spread[k][0] != spread[k][1] else "")
              for k, v in m["rescaled"].items() if not k.startswith("_")]
    lines += _spread_lines(p)
    print("\n".join(lines))
    return 0


def _spread_lines(probe: dict[str, Any]) -> list[str]:
    """Each probe figure's interval (:func:`irqlab.testbed.spread.combined_spread`)."""
    from irqlab.testbed.spread import relative_width

    spread = probe.get("spread") or {}
    if not spread:
        return []
    out = ["", f"the probe's figures, median of {probe.get('probes', 1)} probes with each figure's interval "
               "(the samples' quartiles and every probe's figure) and its width over the median:"]
    for name, s in spread.items():
        width = f"{relative_width(s):.0%}" if s["median"] else "of a zero median"
        out.append(f"  {name} = {s['median']:,.1f} ({s['lo']:,.1f}-{s['hi']:,.1f}, {width}; {s['samples']} samples)")
    return out


def _results_out(text: Optional[str], kind: str) -> Optional[Path]:
    """``--out``, checked before the testbed is built: new, empty or this
    command's earlier output (``irqlab.files.check_results_out``)."""
    from irqlab.files import check_results_out

    return check_results_out(text, "--out", kind, TestbedUsageError) if text is not None else None


def _num(text: str, flag: str, lo: float, hi: float) -> float:
    from irqlab.flags import number

    return number(text, flag, lo, hi, TestbedUsageError)


def _whole(text: str, flag: str, lo: int, hi: int) -> int:
    from irqlab.flags import whole_number

    value = whole_number(text, flag, lo, hi, TestbedUsageError)
    assert value is not None
    return value


def _cmd_run(args: argparse.Namespace) -> int:
    from irqlab.profiles import PROFILES as ACCEPTED
    from irqlab.testbed.compare import agreement, predict
    from irqlab.testbed.run import PROFILES, Plan, run_testbed

    profiles = tuple(PROFILES)
    # `--profiles ''` is an empty list, refused, not the default four
    # (issue 62, item 12): only an absent flag means the default.
    if args.profiles is not None:
        profiles = tuple(p.strip() for p in args.profiles.split(",") if p.strip())
        bad = [p for p in profiles if p not in ACCEPTED]
        if not profiles:
            raise TestbedUsageError(f"--profiles must name at least one of {', '.join(ACCEPTED)}, comma-separated "
                                    f"(got {args.profiles!r}); leave it out for the thesis's four")
        if bad:
            raise TestbedUsageError(f"--profiles takes a comma-separated list of {', '.join(ACCEPTED)} (got {args.profiles!r})")
    policies: dict[str, list[str]] = {}
    for given in args.policy or []:
        label, base, spec = _policy_row(given, args.policy_profile, ACCEPTED)
        if label in policies:
            raise TestbedUsageError(f"--policy {given!r} gives a second row {label!r}; each policy's class must be "
                                    "named differently")
        policies[label] = [base, spec]
        profiles = (*profiles, label)
    if not policies and args.policy_profile != "no-coalescing":
        raise TestbedUsageError("--policy-profile needs --policy (the policy whose row starts from that profile)")
    duration = _num(args.duration, "--duration", 0.2, 60)
    plan = Plan(
        profiles=profiles,
        closed_s=duration,
        open_s=max(0.2, duration * 2 / 3),
        # Whole numbers only: int() of 2.5 would silently run 2.
        connections=_whole(args.connections, "--connections", 1, 1024),
        low_qps=_num(args.low_qps, "--low-qps", 10, 1e6),
        repeats=_whole(args.repeats, "--repeats", 1, 20),
        max_other_cpu_pct=_num(args.max_other_cpu, "--max-other-cpu", 0, 200),
        policies=policies,
    )
    # --out before the testbed is built: a bad one must not be found out after minutes of measuring.
    out = _results_out(args.out, "testbed run")
    progress = None if args.json else (lambda m: print(f"testbed: {m}", file=sys.stderr, flush=True))
    try:
        measured = run_testbed(plan, progress)
    except TestbedError as e:
        raise TestbedUsageError(str(e)) from None
    if out is not None:
        from irqlab.files import write_text_whole

        # The measurement first: minutes of it survive a failure of what follows.
        out.mkdir(exist_ok=True)
        write_text_whole(out / "testbed.json", json.dumps({"measured": measured}, indent=1))
    predicted = None
    draws = None
    machine: dict[str, Any] = {}
    if not args.no_sim:
        from irqlab.testbed.compare import predict_draws
        from irqlab.testbed.background import overrides as background_overrides

        machine = _machine()
        # memcached's background threads, as the server probe measured them.
        bg = background_overrides(measured.get("server_probe"), machine["probe"]["clock_ghz"])
        for m in [machine["rescaled"], *machine.get("draws", [])]:
            m.update(bg)
        predicted = predict(profiles, plan.low_qps, measured["medium_qps"], plan.connections,
                            machine=machine["rescaled"], policies=policies)
        # The same prediction from descriptions drawn from the probe's
        # spread: the simulated side's range.
        if machine.get("draws"):
            draws = predict_draws(profiles, plan.low_qps, measured["medium_qps"], plan.connections,
                                  machine["draws"], policies=policies)
    result: dict[str, Any] = {"measured": measured, "simulated": predicted, "simulated_draws": draws, "machine": machine,
                              "agreement": agreement(measured, predicted, draws) if predicted else []}
    text = render(result)
    if out is not None:
        from irqlab.files import write_text_whole
        from irqlab.testbed.compare import default_scenario
        from irqlab.testbed.results import write_results

        write_results(out, result, default_scenario().read_text() if predicted else None)
        write_text_whole(out / "testbed.json", json.dumps(result, indent=1))
        write_text_whole(out / "testbed.md", "```\n" + text + "\n```\n")
    print(json.dumps(result) if args.json else text)
    return 0


def _policy_row(spec: str, profile: str, accepted: Any) -> tuple[str, str, str]:
    """``--policy`` and ``--policy-profile``, checked before the testbed is
    built: the row's label, its base profile, the spec with an absolute
    path (the controller runs in another process)."""
    from irqlab.linux.control_cmd import ControlError, check_period
    from irqlab.policy import PolicyLoadError, load_policy
    from irqlab.testbed.run import policy_label

    if profile not in accepted:
        raise TestbedUsageError(f"--policy-profile must be one of {', '.join(accepted)} (got {profile!r})")
    try:
        policy = load_policy(spec)
        check_period(policy)
    except (PolicyLoadError, ControlError) as e:
        raise TestbedUsageError(str(e)) from None
    path, _, cls = spec.rpartition(":")
    spec = f"{Path(path).resolve()}:{cls}"
    return policy_label(profile, spec), profile, spec


def _policy_lines(measured: dict[str, Any], sim: dict[str, Any]) -> list[str]:
    """What each policy row's policy did: its controller's calls and
    settings per measurement (median) and the knobs it set, beside the
    simulated runs'."""
    from statistics import median

    out: list[str] = []
    for label, (profile, spec) in (measured["plan"].get("policies") or {}).items():
        reports = [r["policy"] for r in measured.get("runs", []) if r["profile"] == label and r.get("policy")]
        if not reports:
            continue
        knobs = sorted({d["knob"] for rep in reports for d in rep.get("decisions", [])})
        cpu = [100 * r["cpu_s"] / r["elapsed_s"] for r in reports if r.get("cpu_s") is not None and r.get("elapsed_s")]
        line = (f"{label}: {spec.rpartition(':')[2]} from {spec.rpartition(':')[0]} on {profile}; measured, per "
                f"measurement (median) {median(r['calls'] for r in reports):.0f} calls and "
                f"{median(r['changes'] for r in reports):.0f} settings ({', '.join(knobs) or 'none'})")
        if cpu:
            # On the client's core: a closed loop the client limits loses that much.
            line += f", the controller using {median(cpu):.0f} % of the client's core"
        simulated = [x.get("policy") for x in (sim.get(label) or {}).values() if x.get("policy")]
        if simulated:
            line += (f"; simulated {median(x['calls'] for x in simulated):.0f} calls and "
                     f"{median(x['changes'] for x in simulated):.0f} settings per run")
        out.append(line)
    return ["", *out] if out else []


def render(result: dict[str, Any]) -> str:
    m = result["measured"]
    sim = result.get("simulated") or {}
    plan = m["plan"]
    runs = m.get("runs", [])
    flagged = sum(1 for r in runs if r.get("flagged"))
    w = max([21] + [len(r["profile"]) + 2 for r in m["profiles"]])
    lines = [
        f"veth testbed, kernel {m['kernel']}, memcached on core {plan['server_core']}, load generator on core "
        f"{plan['client_core']}, {plan['connections']} connections; open loop at {plan['low_qps']:.0f} "
        f"and {m['medium_qps']:.0f} QPS; {plan.get('repeats', 1)} repeat(s) in rotated order, medians "
        f"(QPS min-max); {flagged} of {len(runs)} measurements flagged (other processes over "
        f"{plan.get('max_other_cpu_pct', 0):g} % of a core, the load generator behind its schedule, or the server "
        "behind the offered load)",
        "NET_RX/req is the client's receive, which veth runs on the server core; NAPI% is the server's own "
        "receive in the NAPI thread",
        "",
        f"{'profile':<{w}}{'':>10}{'QPS':>10}{'min-max':>16}{'p99 us':>9}{'usr%':>7}{'sys%':>7}{'sirq%':>7}"
        f"{'idle%':>7}{'NAPI%':>7}{'NET_RX/req':>11}{'wk/req':>8}",
    ]
    for r in m["profiles"]:
        for phase in ("closed", "low", "medium"):
            x = r.get(phase)
            if not x:
                continue
            lg, core = x["loadgen"], x["server_core"]
            lo, hi = x.get("spread", {}).get("achieved_qps", [lg["achieved_qps"]] * 2)
            per = x.get("per_request", {})
            lines.append(
                f"{r['profile'] if phase == 'closed' else '':<{w}}{phase:>10}{lg['achieved_qps']:>10,.0f}"
                f"{f'{lo:,.0f}-{hi:,.0f}':>16}{lg['latency_us']['p99']:>9.1f}{core['user']:>7.1f}{core['system']:>7.1f}"
                f"{core['softirq']:>7.1f}{core['idle']:>7.1f}{core.get('napi_thread_pct', 0):>7.1f}"
                f"{per.get('net_rx', 0):>11.2f}{per.get('napi_wakeups', 0):>8.2f}"
                + (f"  ({x['flagged']} flagged)" if x.get("flagged") else "")
            )
            s = sim.get(r["profile"], {}).get(phase)
            if s:
                from irqlab.testbed.compare import sim_wakeups_per_s

                c = s["cpu_pct"]
                q = max(s["throughput_qps"], 1e-9)
                lines.append(
                    f"{'':<{w}}{'simulated':>10}{s['throughput_qps']:>10,.0f}{'':>16}{s['latency_us']['p99']:>9.1f}"
                    f"{c['user']:>7.1f}{c['system']:>7.1f}{c['softirq'] + c['irq']:>7.1f}{c['idle']:>7.1f}{'':>7}"
                    f"{'':>11}{sim_wakeups_per_s(s) / q:>8.2f}"
                )
    lines += _policy_lines(m, sim)
    machine = result.get("machine") or {}
    if machine.get("probe"):
        p = machine["probe"]
        lines += ["", f"simulated with this machine's probe: clock {p['clock_ghz']:.2f} GHz, getppid {p['syscall_ns']:.0f} ns, "
                      f"loopback TCP message {p['tcp_message_ns']:.0f} ns, same-CPU wake-up {p['switch_ns']:.0f} ns, "
                      f"cross-CPU wake-up {p['remote_wake_ns'] / 1e3:.1f} us (idle) / {p['busy_wake_ns'] / 1e3:.1f} us (busy, "
                      f"{p['busy_wake_cpu_ns'] / 1e3:.1f} us of its CPU), waker's cost {p['wake_sender_cpu_ns'] / 1e3:.1f} us, "
                      f"a wake-up from idle {p.get('idle_wake_cpu_ns', 0.0) / 1e3:.1f} us of the woken CPU"
                      + (f", the host takes a busy CPU {p['host_preempt_per_s']:.1f} times a second"
                         if p.get("host_preempt_per_s") else "")
                      + (f" and holds a halted one's wake-up back {p['halted_late_per_s']:.1f} times a second halted"
                         if p.get("halted_late_per_s") else "")]
        if result.get("simulated_draws"):
            lines.append(f"each simulated range below is over the median description and "
                         f"{len(result['simulated_draws'])} drawn from the probe's spread:")
            lines += _spread_lines(p)[2:]
    sp = m.get("server_probe")
    if sp and sp.get("wakeups_per_s"):
        each = ", ".join(f"{c} {t['wakeups_per_s']:.0f}/s of {t['cpu_ns_per_wakeup'] / 1e3:.1f} us"
                         for c, t in sorted(sp["threads"].items()))
        lines.append(f"memcached's background threads under {sp['qps']:.0f} gets/s (server probe, {sp['seconds']:.0f} s): "
                     f"{sp['wakeups_per_s']:.0f} wake-ups/s of {sp['cpu_ns_per_wakeup'] / 1e3:.1f} us ({each}), "
                     f"{sp['cpu_pct']:.1f} % of the server core; simulated as app.background_*")
    if result.get("agreement"):
        lines += ["", "measured vs simulated:"] + [f"  {a}" for a in result["agreement"]]
    return "\n".join(lines)
