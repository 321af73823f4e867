"""`irqlab run`'s table says whose each interrupt count is (issue 62, item
17): in a VM run the NIC's physical interrupts beside the guest's virtual
ones, the host NIC's DIM under VirtIO (the guest's virtio-net device has
none), and on bare metal the irq time that is not the NIC's. Made-up
summaries; no simulation."""

from __future__ import annotations

from test_summary import DATA, WITH_DIM

from irqlab import Summary
from irqlab.text import summary_table

VM = {"vm_exits_per_s": 5000.0, "virtual_irqs_per_s": 0.0, "halts_per_s": 10.0, "halt_poll_success_pct": 50.0,
      "host_cpu_pct": {"user": 0.0, "system": 1.0, "softirq": 0.0, "irq": 1.0, "idle": 0.0, "guest": 98.0}}


def _line(summary: dict, start: str) -> str:
    lines = [line for line in summary_table(Summary(summary)).splitlines() if line.startswith(start)]
    assert len(lines) == 1, (start, summary_table(Summary(summary)))
    return lines[0]


def test_a_virtio_run_says_the_irqs_and_dim_are_the_host_nics_and_the_virtual_ones_the_guests():
    s = {**WITH_DIM, "irqs_per_s": 26015.0, "vm": {**VM, "kind": "virtio"}}
    assert "  26,015   physical: the host NIC's (the guest's are its virtual irqs/s)" in _line(s, "host nic irqs/s")
    assert "0 (2us/256): 2.0" in _line(s, "host nic dim rx (% time)")
    assert _line(s, "guest virtual irqs/s").endswith("0   injected into the guest by KVM (device vectors and the "
                                                      "guest's timers)")
    table = summary_table(Summary(s))
    assert not any(line.startswith(("irqs/s", "dim rx", "virtual irqs/s")) for line in table.splitlines()), table


def test_an_assigned_nic_says_its_vectors_are_physical_and_keeps_its_own_dim():
    s = {**WITH_DIM, "irqs_per_s": 1000.0, "vm": {**VM, "kind": "passthrough"}}
    assert "1,000   physical: the assigned NIC's vectors" in _line(s, "nic irqs/s")
    assert _line(s, "dim rx (% time)")
    assert _line(s, "guest virtual irqs/s")


def test_bare_metal_irq_time_that_is_not_the_nics_says_whose():
    # irq-suspend: no NIC interrupt, but the watchdog's hrtimer takes irq time.
    s = {**DATA, "irqs_per_s": 0.0, "watchdog_fires_per_s": 12500.0,
         "cpu_pct": {**DATA["cpu_pct"], "irq": 1.24}}
    assert _line(s, "irqs/s").endswith("0   the NIC's; irq in cpu (%) also counts the NAPI watchdog's hrtimer "
                                       "(12,500/s)")
    steered = {**s, "watchdog_fires_per_s": 0.0, "steering": {"scheme": "rps", "ipis_per_s": 300.0}}
    assert _line(steered, "irqs/s").endswith("also counts steering's IPIs (300/s)")
    # Only the NIC's interrupts: nothing to say.
    plain = {**DATA, "irqs_per_s": 1000.0, "watchdog_fires_per_s": 0.0, "cpu_pct": {**DATA["cpu_pct"], "irq": 2.0}}
    assert _line(plain, "irqs/s").split() == ["irqs/s", "1,000"]
