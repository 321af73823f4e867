"""``irqlab reproduce thesis``, ``cover-letter``, ``itr``, ``iaps``, ``vic`` and ``sriov``: papers' results from the simulator."""

from __future__ import annotations

import argparse

from irqlab.reproduce.harness import ReproduceUsageError, reproduce

__all__ = ["ReproduceUsageError", "add_reproduce_parser"]

# The paper modules (pandas, matplotlib) load only when the command runs,
# so that every other `irqlab` command starts fast; the harness
# (irqlab.reproduce.harness) runs whichever paper is asked for.


def _handler(module: str):
    """The command of the paper declared as ``PAPER`` in ``module``."""

    def handle(args: argparse.Namespace) -> int:
        import importlib

        return reproduce(importlib.import_module(module).PAPER, args)

    return handle


def add_reproduce_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = commands.add_parser(
        "reproduce",
        help="reproduce a paper's results from the simulator",
        description="Reproduce a paper's experiments from the simulator, with the paper's numbers beside them.",
        allow_abbrev=False,
    )
    papers = p.add_subparsers(dest="paper", metavar="PAPER", required=True)
    t = papers.add_parser(
        "thesis",
        help="IRQ Suspend thesis: Table 4.1 and Figure 4.1 (bare metal), Tables 4.2-4.5 and Figures 4.2-4.5 "
        "(VMs), and Cai & Karsten's 8-core results",
        description=(
            "Run Table 4.1 (closed loop, four profiles) and Figure 4.1 (open loop, 100k-500k QPS in steps "
            "of 50k) of the IRQ Suspend thesis as the studies scenarios/thesis/table-4.1.study.toml and "
            "figure-4.1.study.toml, and Cai & Karsten's (SIGMETRICS 2024) four 8-core configurations as "
            "cai-karsten.study.toml (a prediction, not a fit); run both thesis studies again with memcached in a "
            "KVM guest, once per VM setup whose scenario file exists (passthrough.toml: Table 4.4 and Figure 4.4; "
            "sriov.toml: Table 4.5 and Figure 4.5), with the same seeds, durations and loads, and check the "
            "thesis's VM claims (section 4.6) on them; print them beside the papers and write the "
            "results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG plots."
        ),
        allow_abbrev=False,
    )
    t.add_argument("--out", metavar="DIR", default="irqlab-out", help="output directory (default irqlab-out/)")
    t.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/thesis/bare-metal.toml)")
    t.add_argument(
        "--closed-duration",
        metavar="S",
        help="simulated seconds per closed-loop run, Table 4.1's and Cai & Karsten's (default: the studies', 1.0)",
    )
    t.add_argument("--open-duration", metavar="S", help="simulated seconds per open-loop point (default: the study's, 0.5)")
    _run_flags(t, "print the checks and file list as one JSON object")
    t.add_argument(
        "--sensitivity",
        action="store_true",
        help="also rerun both studies with each unfitted constant at x0.5 and x1.5 and report which claims flip "
        "(24 more reproductions; a tornado chart in the report)",
    )
    t.add_argument("--no-vm", action="store_true", help="skip the VM setups (Tables and Figures 4.2-4.5)")
    t.set_defaults(handler=_handler("irqlab.reproduce.thesis_paper"))
    _paper_parser(
        papers,
        "cover-letter",
        "IRQ-suspension cover letter (v7, Linux 6.13): its twelve cases (deferral, busy polling, IRQ suspension) "
        "on an EPYC 7662, predicted",
        (
            "Run the twelve cases of the IRQ-suspension series' v7 cover letter (memcached on 8 cores of an AMD EPYC "
            "7662 with a ConnectX-5 Ex, 4,480 mutilate connections; base, defer10-200, napibusy, fullbusy, "
            "suspend0-200) closed loop and six of them open loop at 200k-1000k QPS as the studies "
            "scenarios/cover-letter/*.study.toml, on a machine description of the EPYC with the thesis's "
            "calibrated code; rerun the closed loop with each value the description cannot source changed; check "
            "the letter's results (L1-L6) on them, print them beside the letter's numbers, and write the results "
            "stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG plots. Nothing is fitted on "
            "the letter."
        ),
        scenario="scenarios/cover-letter/epyc-7662.toml",
        duration="simulated seconds per run (default: the studies', 1.0 closed loop and 0.5 open loop)",
    )
    _paper_parser(
        papers,
        "itr",
        "ITR paper (Emmerich et al., SPECTS 2015): Figures 3, 5, 7 and 8 (no ITR, ixgbe's default ITR, the "
        "linear ITR, load-latency product)",
        (
            "Run Figures 3, 5, 8 and 7 of the ITR paper (one core forwarding 60-byte frames on an 82599, "
            "constant-bit-rate load from 0.02 to 2.5 Mpps; no ITR, ixgbe's default dynamic ITR and the paper's "
            "linear ITR) as the studies scenarios/itr/figure-{3,5,8,7}.study.toml, check the claims of sections "
            "IV-V (C1-C13) on them, print the figures as tables and the claims with their numbers, and write "
            "the results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG plots. One "
            "constant is fitted (costs.forward_packet_cycles, to the 2.1 Mpps overload point); the rest is a "
            "prediction."
        ),
        scenario="scenarios/itr/forwarding.toml",
        duration="simulated seconds per point (default: the studies', 0.2)",
    )
    _paper_parser(
        papers,
        "iaps",
        "IAPS paper (Helbig & Kim, ICOIN 2025): Figures 2 and 3 (RSS, RPS, RFS and IAPS with 1-32 iperf3 "
        "streams on 8 cores)",
        (
            "Run Figure 2 of the IAPS paper (iperf3-like TCP streams into 8 cores at up to ~50 Gbit/s; RPS, RFS "
            "and IAPS steering from one RX queue, RSS with eight) as the studies "
            "scenarios/iaps/figure-2.study.toml and figure-2-rss.study.toml, ten seeds per point, check the claims "
            "of section IV (D1-D10) on the seeds' means, print Figures 2 and 3 as tables and the claims with their "
            "numbers, and write the results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG "
            "plots. One constant is fitted (costs.rx_frame_cycles, where the interrupt core saturates); the rest is "
            "a prediction."
        ),
        scenario="scenarios/iaps/bulk-8core.toml",
        duration="simulated seconds per run (default: the studies', 0.1)",
        seeds="seeds per point (default: the studies', 10)",
    )
    _paper_parser(
        papers,
        "vic",
        "vIC paper (Ahmad, Gulati & Mashtizadeh, USENIX ATC 2011): Tables 2-8 and Figures 3-5 (Iometer in an "
        "ESX VM, OIO 8-64, virtual interrupt coalescing off and on; the IPI send threshold; a TPC-C-like load)",
        (
            "Run Tables 2-5 of the vIC paper (Iometer's one worker reading 4 KB and 8 KB from a cached LUN "
            "through an emulated SCSI adapter, 8-64 outstanding I/Os, vIC off and on) as the studies "
            "scenarios/vic/table-2.study.toml and table-4.study.toml, and Figure 5 (the IPI send threshold with "
            "Iometer and a CPU-bound Hyper Pi in one 2-vCPU VM) as figure-5.study.toml and "
            "figure-5-no-io.study.toml, and Table 8 and Figures 3-4 (a TPC-C-like load, vIC off and at "
            "cifThreshold 4 and 2) as table-8.study.toml, and Table 7 (SQLIOSim- and GSBlaster-like loads) as "
            "table-7-sqliosim.study.toml and table-7-gsblaster.study.toml, three seeds per point, check the claims "
            "of sections 4.1-4.5 (V1-V24) on the seeds' means, print Tables 2, 3 and 6 beside the paper, the "
            "withheld Tables 4-5, 7 and 8 and Figures 3-5 as simulated, and write the results stores (Parquet), an HTML report, CSV, "
            "JSON, a Markdown report and PNG plots. The path's costs are fitted on Table 2's baseline rows; "
            "everything with vIC on is a prediction."
        ),
        scenario="scenarios/vic/iometer.toml",
        duration="simulated seconds per run (default: the studies', 0.5)",
        seeds="seeds per point (default: the studies', 3)",
    )
    _paper_parser(
        papers,
        "sriov",
        "SR-IOV paper (Guan et al.): Figures I-IV (KVM guests on 82599 virtual functions; a static throttle "
        "rate, and 1-15 VMs with the default ITR against the golden-section tuner)",
        (
            "Run Figure I of the SR-IOV paper (three KVM guests, each receiving a TCP stream through its own 82599 "
            "virtual function over one 10 Gbit/s wire, the VFs' interrupt throttle rate fixed from 978 to "
            "488,281 per second) as the study scenarios/sriov/figure-1.study.toml, and Figures II-IV (1-15 VMs, "
            "ixgbevf's default dynamic ITR against the paper's golden-section search of the rate) as "
            "figure-2.study.toml, check the claims of sections III and V-B (S1-S6), print the figures as tables "
            "and the claims with their numbers, and write the results stores (Parquet), an HTML report, CSV, "
            "JSON, a Markdown report and PNG plots. One constant is fitted (costs.rx_frame_cycles, where the "
            "guests' CPU is used up); the rest is a prediction."
        ),
        scenario="scenarios/sriov/r630.toml",
        duration="simulated seconds per run (default: the studies', 0.1)",
        seeds="seeds per point (default: the studies', 1)",
    )
    _index_parser(papers)


def _index_parser(papers) -> None:
    """``irqlab reproduce index``: the page over every paper's reproduction."""
    p = papers.add_parser(
        "index",
        help="write the index page over the papers reproduced in a directory (irqlab-out/index.html)",
        description=(
            "Write DIR/index.html over the reproductions under DIR (the thesis's in DIR, the others' in "
            "DIR/<paper>): per paper how many claims hold as predictions, as fits and by construction, its "
            "headline figure and a link to its report; print one line per paper and the index's path. Runs "
            "nothing: it reads what the reproductions wrote."
        ),
        allow_abbrev=False,
    )
    p.add_argument("--out", metavar="DIR", default="irqlab-out", help="the reproductions' directory (default irqlab-out/)")

    def handle(args: argparse.Namespace) -> int:
        from irqlab.reproduce.index import command

        return command(args)

    p.set_defaults(handler=handle)


def _paper_parser(papers, name: str, help: str, description: str, *, scenario: str, duration: str,
                  seeds: str = "") -> None:
    """``irqlab reproduce NAME``: a paper whose studies all take
    ``--duration`` (and ``--seeds``), run by the harness. Its ``--out``
    defaults beside the thesis's irqlab-out/: the reports have the same names."""
    p = papers.add_parser(name, help=help, description=description, allow_abbrev=False)
    p.add_argument("--out", metavar="DIR", default=f"irqlab-out/{name}", help=f"output directory (default irqlab-out/{name}/)")
    p.add_argument("--scenario", metavar="FILE", help=f"scenario file (default {scenario})")
    p.add_argument("--duration", metavar="S", help=duration)
    if seeds:
        p.add_argument("--seeds", metavar="N", help=seeds)
    _run_flags(p, "print the checks, tables and file list as one JSON object")
    p.set_defaults(handler=_handler(f"irqlab.reproduce.{name.replace('-', '_')}"))


def _run_flags(p: argparse.ArgumentParser, json_help: str) -> None:
    """The flags every reproduction has: seed, jobs, resume, plots, progress, JSON."""
    p.add_argument("--seed", metavar="N", help="base seed the runs' seeds are derived from (default: the studies', 1)")
    p.add_argument("--jobs", metavar="N", help="parallel runs (default: every core)")
    p.add_argument("--resume", action="store_true", help="keep the runs an interrupted reproduction finished in --out")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into --out even if it holds another kind of output (another reproduction's, a sweep's, "
        "other files); refused without it",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress indication")
    p.add_argument("--json", action="store_true", help=json_help)
