#!/usr/bin/env python3
"""Code-size span of two Linux 6.1 interrupt paths, measured on Debian's
linux-image-6.1.0-50-amd64 (6.1.176-1) binaries.

Sizes:
  vmlinux  : System.map gap = address of the next higher symbol minus this
             symbol's address (includes the alignment padding up to the next
             symbol).  The ELF st_size from the -dbg vmlinux is printed beside
             it when that file is present (exact size, no padding).
  modules  : st_size from `nm -S --defined-only` (ROOT/<mod>.ko.syms),
             i.e. without padding; .cold sub-functions are not included.
Each distinct function is counted once per path even if called several times.

"main"  = executed in the common case described in the report.
"maybe" = executed only sometimes (config/boot-option/CPU/guest dependent).

With the -dbg binaries present, every (caller -> callee) edge marked with a
check string is verified in the caller's disassembly ("ok"), "ind" marks an
indirect call (function pointer / static_call target) that cannot be seen
statically, "-" an edge that is a fall-through or a hardware entry.

Usage (docs/notes/kvm-exit-footprint.md gives the steps that fill ROOT):

    python3 tools/kernel_path_bytes.py ROOT > path_sizes.txt

ROOT holds x/ (linux-image-6.1.0-50-amd64-unsigned 6.1.176-1, extracted),
dl/dbg/ (linux-image-6.1.0-50-amd64-dbg, extracted) and the modules' text
symbols as <module>.ko.syms (`nm -S --defined-only`).
"""
import os, re, subprocess, sys
from functools import lru_cache

K = sys.argv[1] if len(sys.argv) > 1 else '.'
SYSMAP_CANDIDATES = [f'{K}/x/boot/System.map-6.1.0-50-amd64',  # stub in -unsigned pkg
                     f'{K}/dl/dbg/usr/lib/debug/boot/System.map-6.1.0-50-amd64']  # from -dbg pkg
VMLINUX_DBG = f'{K}/dl/dbg/usr/lib/debug/boot/vmlinux-6.1.0-50-amd64'
MODDIR = f'{K}/x/lib/modules/6.1.0-50-amd64/kernel'
MODS = {
    'kvm': ('kvm.ko.syms', 'arch/x86/kvm/kvm.ko'),
    'kvm-intel': ('kvm-intel.ko.syms', 'arch/x86/kvm/kvm-intel.ko'),
    'mlx5_core': ('mlx5_core.ko.syms', 'drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko'),
    'vfio-pci-core': ('vfio-pci-core.ko.syms', 'drivers/vfio/pci/vfio-pci-core.ko'),
}
V = 'vmlinux'

# --------------------------------------------------------------------------
# symbol tables
def load_sysmap():
    for p in SYSMAP_CANDIDATES:
        if os.path.exists(p) and os.path.getsize(p) > 100000:
            syms = []
            for l in open(p):
                a, t, n = l.split()[:3]
                syms.append((int(a, 16), t, n))
            return p, syms
    sys.exit('no usable System.map (the one in linux-image-*-unsigned is a stub; '
             'take it from linux-image-6.1.0-50-amd64-dbg)')

MAP_PATH, MAP = load_sysmap()
_byname = {}
for a, t, n in MAP:
    _byname.setdefault(n, []).append(a)
_addrs = sorted({a for a, t, n in MAP if t not in 'aA'})
_stext = _byname['_stext'][0]; _etext = _byname['_etext'][0]

def vm_gap(addr):
    import bisect
    i = bisect.bisect_right(_addrs, addr)
    nxt = _addrs[i] if i < len(_addrs) else _etext
    return min(nxt, _etext) - addr

@lru_cache(None)
def vm_stsize():
    """ELF st_size per address from the -dbg vmlinux (optional)."""
    if not os.path.exists(VMLINUX_DBG):
        return {}
    out = subprocess.run(['nm', '-S', '--defined-only', VMLINUX_DBG],
                         capture_output=True, text=True).stdout
    d = {}
    for l in out.splitlines():
        p = l.split()
        if len(p) == 4 and p[2] in 'tTwW':
            d[(int(p[0], 16), p[3])] = int(p[1], 16)
    return d

def vm_addr(name, addr=None):
    al = _byname.get(name)
    if not al:
        raise KeyError(f'{name} not in System.map')
    if addr is not None:
        assert addr in al, (name, hex(addr))
        return addr
    if len(al) > 1:
        raise KeyError(f'{name} is ambiguous in System.map: {[hex(x) for x in al]}')
    return al[0]

@lru_cache(None)
def mod_syms(mod):
    d = {}
    for l in open(f'{K}/{MODS[mod][0]}'):
        p = l.split()
        if len(p) == 4 and p[2] in 'tT':
            d.setdefault(p[3], []).append((int(p[0], 16), int(p[1], 16)))
    return d

def size_of(name, mod, addr=None):
    """-> (size used for totals, ELF st_size or None)"""
    if mod == V:
        a = vm_addr(name, addr)
        return vm_gap(a), vm_stsize().get((a, name))
    s = mod_syms(mod).get(name)
    if not s:
        raise KeyError(f'{name} not in {mod}')
    if len(s) > 1:
        raise KeyError(f'{name} ambiguous in {mod}')
    return s[0][1], s[0][1]

# --------------------------------------------------------------------------
# disassembly, for verifying caller->callee edges
@lru_cache(None)
def dis(name, mod, addr=None):
    if mod == V:
        if not os.path.exists(VMLINUX_DBG):
            return None
        a = vm_addr(name, addr)
        r = subprocess.run(['objdump', '-d', '--no-show-raw-insn', f'--start-address={a:#x}',
                            f'--stop-address={a + vm_gap(a):#x}', VMLINUX_DBG],
                           capture_output=True, text=True)
        return r.stdout
    ko = f'{MODDIR}/{MODS[mod][1]}'
    secs = {}
    for l in subprocess.run(['readelf', '-SW', ko], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r'\s*\[\s*(\d+)\]\s+(\S+)', l)
        if m:
            secs[m.group(1)] = m.group(2)
    for l in subprocess.run(['readelf', '-sW', ko], capture_output=True, text=True).stdout.splitlines():
        p = l.split()
        if len(p) >= 8 and p[7] == name and p[3] == 'FUNC':
            a, sz, sec = int(p[1], 16), int(p[2]), secs[p[6]]
            return subprocess.run(['objdump', '-dr', '--no-show-raw-insn', '-j', sec,
                                   f'--start-address={a:#x}', f'--stop-address={a + sz:#x}', ko],
                                  capture_output=True, text=True).stdout
    return None

def verify(e):
    chk = e.get('check', e['name'])
    if chk is None:
        return '-'
    if chk == 'IND':
        return 'ind'
    cmod = e.get('cmod', e['mod'])
    txt = dis(e['caller'], cmod, e.get('caddr'))
    if txt is None:
        return '?'
    pat = re.compile(r'(<|\s)' + re.escape(chk) + r'(>|-0x4|\+|$)', re.M)
    return 'ok' if pat.search(txt) else 'NOT FOUND'

# --------------------------------------------------------------------------
def E(name, mod, caller, site, cmod=None, check=None, kind='main', addr=None, size=None,
      note='', caddr=None):
    e = dict(name=name, mod=mod, caller=caller, site=site, kind=kind, note=note)
    if cmod is not None: e['cmod'] = cmod
    e['check'] = name if check is None else (None if check == '-' else check)
    if addr is not None: e['addr'] = addr
    if caddr is not None: e['caddr'] = caddr
    if size is not None: e['size'] = size
    return e

X2APIC_CLUSTER_EOI = 0xffffffff810753e0   # copy of native_apic_msr_eoi_write in x2apic_cluster.c
M = 'maybe'

# Common x86 external-interrupt entry (IDT stub -> asm_common_interrupt -> common_interrupt)
def irq_core(user):
    L = [
        E('irq_entries_start', V, '(IDT gate)', 'arch/x86/include/asm/idtentry.h irq_entries_start: one '
          '8-byte "push $vector; jmp asm_common_interrupt" stub (IDT_ALIGN) of the table',
          check='-', size=8),
        E('asm_common_interrupt', V, 'irq_entries_start', 'idtentry.h irq_entries_start stub: jmp asm_common_interrupt'),
        E('error_entry', V, 'asm_common_interrupt', 'arch/x86/entry/entry_64.S:341 idtentry_body: call error_entry'),
    ]
    if user:
        L.append(E('sync_regs', V, 'error_entry', 'entry_64.S:1057 error_entry (from user mode): call sync_regs'))
    L += [
        E('common_interrupt', V, 'asm_common_interrupt', 'entry_64.S idtentry_body: call common_interrupt '
          '(DEFINE_IDTENTRY_IRQ, arch/x86/kernel/irq.c:242)'),
        E('irqentry_enter', V, 'common_interrupt', 'arch/x86/kernel/irq.c:242 DEFINE_IDTENTRY_IRQ(common_interrupt) (macro in asm/idtentry.h)'),
    ]
    if user:
        L.append(E('irqentry_enter_from_user_mode', V, 'irqentry_enter', 'kernel/entry/common.c:328 irqentry_enter'))
    L += [
        E('irq_enter_rcu', V, 'common_interrupt', 'irq_stack.h run_irq_on_irqstack_cond -> call_on_irqstack: irq_enter_rcu()'),
        E('__common_interrupt', V, 'common_interrupt', 'irq_stack.h run_irq_on_irqstack_cond: __common_interrupt()'),
        E('handle_edge_irq', V, '__common_interrupt', 'include/linux/irqdesc.h:158 generic_handle_irq_desc: '
          'desc->handle_irq() (arch/x86/kernel/irq.c:252 __common_interrupt -> handle_irq)', check='IND'),
        E('_raw_spin_lock', V, 'handle_edge_irq', 'kernel/irq/chip.c:777 handle_edge_irq; handle.c:212 handle_irq_event'),
        E('irq_chip_ack_parent', V, 'handle_edge_irq', 'kernel/irq/chip.c:800 handle_edge_irq: chip->irq_ack '
          '(IR-PCI-MSI chip, arch/x86/kernel/apic/msi.c:219)', check='IND'),
        E('apic_ack_irq', V, 'irq_chip_ack_parent', 'kernel/irq/chip.c:1373 irq_chip_ack_parent -> INTEL-IR '
          'chip .irq_ack (drivers/iommu/intel/irq_remapping.c:1245)', check='IND'),
        E('native_apic_msr_eoi_write', V, 'apic_ack_irq', 'arch/x86/include/asm/apic.h:399 apic_eoi: '
          'apic->eoi_write (x2apic_cluster copy)', check='IND', addr=X2APIC_CLUSTER_EOI),
        E('handle_irq_event', V, 'handle_edge_irq', 'kernel/irq/chip.c:819 handle_edge_irq'),
        E('_raw_spin_unlock', V, 'handle_irq_event', 'kernel/irq/handle.c:208 handle_irq_event; chip.c:825 handle_edge_irq'),
        E('__handle_irq_event_percpu', V, 'handle_irq_event', 'kernel/irq/handle.c:193 handle_irq_event_percpu '
          '(inlined into handle_irq_event)'),
    ]
    return L

def irq_tail(user):
    L = [
        E('add_interrupt_randomness', V, 'handle_irq_event', 'kernel/irq/handle.c:195 handle_irq_event_percpu'),
        E('fast_mix', V, 'add_interrupt_randomness', 'drivers/char/random.c:1076 add_interrupt_randomness'),
        E('note_interrupt', V, 'handle_irq_event', 'kernel/irq/handle.c:198 handle_irq_event_percpu'),
        E('irq_exit_rcu', V, 'common_interrupt', 'irq_stack.h run_irq_on_irqstack_cond: irq_exit_rcu()'),
        E('__irq_exit_rcu', V, 'irq_exit_rcu', 'kernel/softirq.c:691 irq_exit_rcu'),
        E('idle_cpu', V, '__irq_exit_rcu', 'kernel/softirq.c:662 tick_irq_exit (inlined in __irq_exit_rcu)'),
        E('irqentry_exit', V, 'common_interrupt', 'irq.c:242 DEFINE_IDTENTRY_IRQ(common_interrupt): irqentry_exit()'),
    ]
    if user:
        L += [
            E('irqentry_exit_to_user_mode', V, 'irqentry_exit', 'kernel/entry/common.c:419 irqentry_exit'),
            E('exit_to_user_mode_prepare', V, 'irqentry_exit_to_user_mode', 'kernel/entry/common.c:316 irqentry_exit_to_user_mode'),
            E('fpregs_assert_state_consistent', V, 'exit_to_user_mode_prepare',
              'arch/x86/include/asm/entry-common.h:56 arch_exit_to_user_mode_prepare (CONFIG_X86_DEBUG_FPU=y)'),
            E('amd_clear_divider', V, 'irqentry_exit_to_user_mode', 'arch/x86/include/asm/entry-common.h:98 '
              'arch_exit_to_user_mode (out-of-line noinstr, empty ALTERNATIVE on Intel)'),
        ]
    L.append(E('error_return', V, 'asm_common_interrupt', 'entry_64.S:359 idtentry_body: jmp error_return'))
    if user:
        L.append(E('swapgs_restore_regs_and_return_to_usermode', V, 'error_return',
                   'entry_64.S:1124 error_return -> common_interrupt_return (same address)',
                   check='__irqentry_text_end'))
        L.append(E('early_xen_iret_patch', V, 'swapgs_restore_regs_and_return_to_usermode',
                   'entry_64.S common_interrupt_return: jmp .Lnative_iret (label inside this symbol)',
                   check='early_xen_iret_patch+0x5'))
    else:
        L.append(E('restore_regs_and_return_to_kernel', V, 'error_return', 'entry_64.S:1123 error_return (kernel mode)'))
        L.append(E('early_xen_iret_patch', V, 'restore_regs_and_return_to_kernel',
                   'entry_64.S common_interrupt_return: falls through to .Lnative_iret', check='-'))
    L.append(E('native_irq_return_iret', V, 'early_xen_iret_patch', 'entry_64.S .Lnative_iret: iretq', check='-'))
    return L

# ------------------------------------------------------------------ Path A
PATH_A = irq_core(user=True) + [
    E('irq_int_handler', 'mlx5_core', '__handle_irq_event_percpu', 'kernel/irq/handle.c:158 '
      '__handle_irq_event_percpu: action->handler (mlx5 pci_irq.c:195 irq_int_handler, a.k.a. mlx5_irq_int_handler)',
      cmod=V, check='IND'),
    E('atomic_notifier_call_chain', V, 'irq_int_handler', 'drivers/net/ethernet/mellanox/mlx5/core/pci_irq.c:197 irq_int_handler',
      cmod='mlx5_core'),
    E('__rcu_read_lock', V, 'atomic_notifier_call_chain', 'kernel/notifier.c atomic_notifier_call_chain rcu_read_lock; '
      'mlx5 eq.c:96 mlx5_eq_cq_get (CONFIG_PREEMPT_RCU=y: out of line)'),
    E('__rcu_read_unlock', V, 'atomic_notifier_call_chain', 'kernel/notifier.c atomic_notifier_call_chain; eq.c:100 mlx5_eq_cq_get'),
    E('mlx5_eq_comp_int', 'mlx5_core', 'atomic_notifier_call_chain', 'kernel/notifier.c:87 notifier_call_chain: nb->notifier_call',
      cmod=V, check='IND'),
    E('mlx5_eq_cq_get', 'mlx5_core', 'mlx5_eq_comp_int', 'mlx5/core/eq.c:130 mlx5_eq_comp_int'),
    E('radix_tree_lookup', V, 'mlx5_eq_cq_get', 'mlx5/core/eq.c:97 mlx5_eq_cq_get', cmod='mlx5_core'),
    E('__radix_tree_lookup', V, 'radix_tree_lookup', 'lib/radix-tree.c:817 radix_tree_lookup'),
    E('mlx5e_completion_event', 'mlx5_core', 'mlx5_eq_comp_int', 'mlx5/core/eq.c:133 mlx5_eq_comp_int: cq->comp (en_txrx.c:258)',
      check='IND'),
    E('napi_schedule_prep', V, 'mlx5e_completion_event', 'include/linux/netdevice.h:482 napi_schedule '
      '(in en_txrx.c mlx5e_completion_event)', cmod='mlx5_core'),
    E('__napi_schedule', V, 'mlx5e_completion_event', 'include/linux/netdevice.h:483 napi_schedule', cmod='mlx5_core'),
    E('__list_add_valid', V, '__napi_schedule', 'net/core/dev.c:4500 ____napi_schedule list_add_tail (CONFIG_DEBUG_LIST=y)'),
    E('raise_softirq_irqoff', V, '__napi_schedule', 'net/core/dev.c:4501 ____napi_schedule: raise_softirq_irqoff(NET_RX_SOFTIRQ)'),
    E('__tasklet_schedule', V, 'mlx5_eq_comp_int', 'include/linux/interrupt.h:712 tasklet_schedule <- eq.c:148 '
      'mlx5_eq_comp_int (mlx5 CQ tasklet; TASKLET_SOFTIRQ)', cmod='mlx5_core'),
    E('__tasklet_schedule_common', V, '__tasklet_schedule', 'kernel/softirq.c:779 __tasklet_schedule'),
] + irq_tail(user=True) + [
    # ---- sometimes
    E('__ct_user_exit', V, 'irqentry_enter_from_user_mode', 'include/linux/context_tracking.h:48 user_exit_irqoff: '
      'only if context tracking is active (nohz_full= CPUs)', kind=M),
    E('__ct_user_enter', V, 'irqentry_exit_to_user_mode', 'context_tracking.h:42 user_enter_irqoff: nohz_full only', kind=M),
    E('tick_irq_enter', V, 'irq_enter_rcu', 'kernel/softirq.c:642 irq_enter_rcu: nohz_full CPU or idle task only', kind=M),
    E('add_timer_on', V, 'add_interrupt_randomness', 'drivers/char/random.c:1089: once per 1024 IRQs or 1 s per CPU', kind=M),
    E('apic_ack_edge', V, 'irq_chip_ack_parent', 'without interrupt remapping: PCI-MSI parent is the VECTOR chip '
      '(.irq_ack = apic_ack_edge) instead of apic_ack_irq', check='-', kind=M),
    E('__irq_move_irq', V, 'apic_ack_irq', 'include/linux/irq.h:614 irq_move_irq: only with an affinity change pending', kind=M),
]

# ------------------------------------------------------------------ Path B
KI, KV, VF = 'kvm-intel', 'kvm', 'vfio-pci-core'
PATH_B = [
    # --- VM exit: back in __vmx_vcpu_run / vmx_vcpu_enter_exit / vmx_vcpu_run
    E('__vmx_vcpu_run', KI, 'vmx_vcpu_enter_exit', 'arch/x86/kvm/vmx/vmx.c:7206 vmx_vcpu_enter_exit (vmenter.S: '
      'vmx_vmexit label .. RET, and the entry half up to VMRESUME)'),
    E('vmx_spec_ctrl_restore_host', KI, '__vmx_vcpu_run', 'arch/x86/kvm/vmx/vmenter.S:243 __vmx_vcpu_run'),
    E('vmx_vcpu_enter_exit', KI, 'vmx_vcpu_run', 'vmx.c:7312 vmx_vcpu_run', check='.noinstr.text+0x8c'),
    E('vmx_vcpu_run', KI, 'kvm_arch_vcpu_ioctl_run', 'arch/x86/kvm/x86.c:10910 vcpu_enter_guest: '
      'static_call(kvm_x86_vcpu_run)', cmod=KV, check='__SCT__kvm_x86_vcpu_run'),
    E('kvm_load_host_xsave_state', KV, 'vmx_vcpu_run', 'vmx.c:7343 vmx_vcpu_run (XCR0/XSS/PKRU switch)', cmod=KI),
    E('__vmx_complete_interrupts', KI, 'vmx_vcpu_run', 'vmx.c:7065 vmx_complete_interrupts <- vmx_vcpu_run'),
    E('kvm_arch_vcpu_ioctl_run', KV, 'kvm_vcpu_ioctl', 'virt/kvm/kvm_main.c kvm_vcpu_ioctl(KVM_RUN); contains the '
      'inlined vcpu_run() loop and vcpu_enter_guest() (x86.c:10632-11030)', check='-'),
    E('vmx_handle_exit_irqoff', KI, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10965 vcpu_enter_guest: '
      'static_call(kvm_x86_handle_exit_irqoff); handle_external_interrupt_irqoff inlined', cmod=KV,
      check='__SCT__kvm_x86_handle_exit_irqoff'),
    E('vmx_do_interrupt_nmi_irqoff', KI, 'vmx_handle_exit_irqoff', 'vmx.c:6875 handle_interrupt_nmi_irqoff '
      '(vmenter.S: fake IRET frame, CALL_NOSPEC IDT gate)'),
] + [dict(e, caller=('vmx_do_interrupt_nmi_irqoff' if e['name'] == 'irq_entries_start' else e['caller']),
          site=('vmenter.S:346 vmx_do_interrupt_nmi_irqoff CALL_NOSPEC gate_offset(host IDT[vector]) -> one 8-byte '
                'irq_entries_start stub' if e['name'] == 'irq_entries_start' else e['site']))
     for e in irq_core(user=False)] + [
    E('vfio_msihandler', VF, '__handle_irq_event_percpu', 'kernel/irq/handle.c:158 __handle_irq_event_percpu: '
      'action->handler (drivers/vfio/pci/vfio_pci_intrs.c:307)', cmod=V, check='IND'),
    E('eventfd_signal', V, 'vfio_msihandler', 'drivers/vfio/pci/vfio_pci_intrs.c:311 vfio_msihandler', cmod=VF),
    E('eventfd_signal_mask', V, 'eventfd_signal', 'fs/eventfd.c:90 eventfd_signal'),
    E('_raw_spin_lock_irqsave', V, 'eventfd_signal_mask', 'fs/eventfd.c:61 eventfd_signal_mask'),
    E('__wake_up_locked_key', V, 'eventfd_signal_mask', 'fs/eventfd.c:67 wake_up_locked_poll'),
    E('__wake_up_common', V, '__wake_up_locked_key', 'kernel/sched/wait.c:175 __wake_up_locked_key'),
    E('irqfd_wakeup', KV, '__wake_up_common', 'kernel/sched/wait.c:107 __wake_up_common: curr->func '
      '(virt/kvm/eventfd.c irqfd_wakeup)', cmod=V, check='IND'),
    E('eventfd_ctx_do_read', V, 'irqfd_wakeup', 'virt/kvm/eventfd.c:206 irqfd_wakeup', cmod=KV),
    E('__srcu_read_lock', V, 'irqfd_wakeup', 'include/linux/srcu.h:164 srcu_read_lock <- eventfd.c irqfd_wakeup; '
      'also kvm_vcpu_srcu_read_lock in vcpu_enter_guest', cmod=KV),
    E('kvm_arch_set_irq_inatomic', KV, 'irqfd_wakeup', 'virt/kvm/eventfd.c:221 irqfd_wakeup'),
    E('kvm_set_msi_irq', KV, 'kvm_arch_set_irq_inatomic', 'arch/x86/kvm/irq_comm.c:173 kvm_arch_set_irq_inatomic'),
    E('x86_msi_msg_get_destid', V, 'kvm_set_msi_irq', 'arch/x86/kvm/irq_comm.c:113 kvm_set_msi_irq', cmod=KV),
    E('kvm_irq_delivery_to_apic_fast', KV, 'kvm_arch_set_irq_inatomic', 'irq_comm.c:175 kvm_arch_set_irq_inatomic'),
    E('__rcu_read_lock', V, 'kvm_irq_delivery_to_apic_fast', 'lapic.c kvm_irq_delivery_to_apic_fast rcu_read_lock; '
      'kernel/exit.c rcuwait_wake_up', cmod=KV),
    E('kvm_apic_map_get_dest_lapic', KV, 'kvm_irq_delivery_to_apic_fast', 'arch/x86/kvm/lapic.c:1080 kvm_irq_delivery_to_apic_fast'),
    E('__apic_accept_irq', KV, 'kvm_irq_delivery_to_apic_fast', 'lapic.c:674 kvm_apic_set_irq (inlined into '
      'kvm_irq_delivery_to_apic_fast)'),
    E('vmx_deliver_interrupt', KI, '__apic_accept_irq', 'lapic.c:1177 __apic_accept_irq: '
      'static_call(kvm_x86_deliver_interrupt); non-APICv branch sets IRR + KVM_REQ_EVENT', cmod=KV,
      check='__SCT__kvm_x86_deliver_interrupt'),
    E('kvm_vcpu_kick', KV, 'vmx_deliver_interrupt', 'vmx.c:4235 vmx_deliver_interrupt (vCPU is this CPU\'s '
      'kvm_running_vcpu -> no IPI)', cmod=KI),
    E('rcuwait_wake_up', V, 'kvm_vcpu_kick', 'include/linux/kvm_host.h:1555 __kvm_vcpu_wake_up <- kvm_vcpu_kick', cmod=KV),
    E('__rcu_read_unlock', V, 'kvm_irq_delivery_to_apic_fast', 'lapic.c kvm_irq_delivery_to_apic_fast; exit.c rcuwait_wake_up',
      cmod=KV),
    E('__srcu_read_unlock', V, 'irqfd_wakeup', 'srcu.h:191 srcu_read_unlock <- irqfd_wakeup; also '
      'kvm_vcpu_srcu_read_unlock in vcpu_enter_guest', cmod=KV),
    E('_raw_spin_unlock_irqrestore', V, 'eventfd_signal_mask', 'include/linux/spinlock.h:406 <- fs/eventfd.c eventfd_signal_mask'),
] + irq_tail(user=False) + [
    # --- vcpu_enter_guest after the IRQ, vmx_handle_exit, vcpu_run loop
    E('vmx_handle_exit', KI, 'kvm_arch_vcpu_ioctl_run', 'x86.c:11020 vcpu_enter_guest: static_call(kvm_x86_handle_exit); '
      '__vmx_handle_exit + handle_external_interrupt + PML flush check inlined', cmod=KV, check='__SCT__kvm_x86_handle_exit'),
    E('kvm_cpu_has_pending_timer', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:11137 vcpu_run'),
    E('apic_has_pending_timer', KV, 'kvm_cpu_has_pending_timer', 'arch/x86/kvm/irq.c:28 kvm_cpu_has_pending_timer'),
    # --- next vcpu_enter_guest: request processing, injection
    E('kvm_service_local_tlb_flush_requests', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10686 vcpu_enter_guest '
      '(inside if (kvm_request_pending()))'),
    E('kvm_apic_accept_events', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10781 vcpu_enter_guest (KVM_REQ_EVENT)'),
    E('kvm_check_and_inject_events', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10791 vcpu_enter_guest (KVM_REQ_EVENT)'),
    E('kvm_cpu_has_injectable_intr', KV, 'kvm_check_and_inject_events', 'x86.c:10160 and :10169 kvm_check_and_inject_events'),
    E('kvm_cpu_has_extint', KV, 'kvm_cpu_has_injectable_intr', 'arch/x86/kvm/irq.c:84 kvm_cpu_has_injectable_intr; '
      'irq.c:113 kvm_cpu_get_extint'),
    E('kvm_apic_accept_pic_intr', KV, 'kvm_cpu_has_extint', 'arch/x86/kvm/irq.c:67 kvm_cpu_has_extint'),
    E('kvm_apic_has_interrupt', KV, 'kvm_cpu_has_injectable_intr', 'irq.c:90 kvm_cpu_has_injectable_intr; '
      'lapic.c:2752 kvm_get_apic_interrupt'),
    E('__apic_update_ppr', KV, 'kvm_apic_has_interrupt', 'lapic.c:2723 kvm_apic_has_interrupt; lapic.c:2782 kvm_get_apic_interrupt'),
    E('apic_has_interrupt_for_ppr', KV, 'kvm_apic_has_interrupt', 'lapic.c:2724 kvm_apic_has_interrupt '
      '(sync_pir_to_irr is NULL without APICv -> apic_find_highest_irr inline)'),
    E('vmx_interrupt_allowed', KI, 'kvm_check_and_inject_events', 'x86.c:10161 (+ WARN_ON re-check :10167) '
      'static_call(kvm_x86_interrupt_allowed)', cmod=KV, check='__SCT__kvm_x86_interrupt_allowed'),
    E('__vmx_interrupt_blocked', KI, 'vmx_interrupt_allowed', 'vmx.c:5006 vmx_interrupt_blocked (inlined)'),
    E('vmx_get_rflags', KI, '__vmx_interrupt_blocked', 'vmx.c:4996 __vmx_interrupt_blocked'),
    E('kvm_cpu_get_interrupt', KV, 'kvm_check_and_inject_events', 'x86.c:10165 kvm_check_and_inject_events'),
    E('kvm_get_apic_interrupt', KV, 'kvm_cpu_get_interrupt', 'arch/x86/kvm/irq.c:142 kvm_cpu_get_interrupt'),
    E('vmx_inject_irq', KI, 'kvm_check_and_inject_events', 'x86.c:10166 static_call(kvm_x86_inject_irq)', cmod=KV,
      check='__SCT__kvm_x86_inject_irq'),
    E('update_cr8_intercept', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10800 vcpu_enter_guest'),
    E('kvm_lapic_find_highest_irr', KV, 'update_cr8_intercept', 'x86.c:9922 update_cr8_intercept'),
    E('kvm_lapic_get_cr8', KV, 'update_cr8_intercept', 'x86.c:9929 update_cr8_intercept'),
    E('vmx_update_cr8_intercept', KI, 'update_cr8_intercept', 'x86.c:9931 static_call(kvm_x86_update_cr8_intercept)',
      cmod=KV, check='__SCT__kvm_x86_update_cr8_intercept'),
    E('kvm_lapic_sync_to_vapic', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10801 vcpu_enter_guest; '
      'apic_sync_pv_eoi_to_guest/pv_eoi_set_pending inlined'),
    E('kvm_write_guest_cached', KV, 'kvm_lapic_sync_to_vapic', 'lapic.c:734 pv_eoi_put_user <- pv_eoi_set_pending '
      '(guest has PV EOI enabled: Linux guests)'),
    E('kvm_write_guest_offset_cached', KV, 'kvm_write_guest_cached', 'virt/kvm/kvm_main.c:3256 kvm_write_guest_cached'),
    E('__check_object_size', V, 'kvm_write_guest_offset_cached', 'include/linux/thread_info.h:199 check_object_size '
      '<- __copy_to_user (CONFIG_HARDENED_USERCOPY=y)', cmod=KV),
    E('check_stack_object', V, '__check_object_size', 'mm/usercopy.c:225 __check_object_size (&val is on the stack)'),
    E('copy_user_enhanced_fast_string', V, 'kvm_write_guest_offset_cached', 'arch/x86/include/asm/uaccess_64.h:37 '
      'copy_user_generic ALTERNATIVE (ERMS CPUs; binary default shows copy_user_generic_unrolled)', cmod=KV,
      check='copy_user_generic_unrolled'),
    E('copy_user_short_string', V, 'copy_user_enhanced_fast_string', 'arch/x86/lib/copy_user_64.S:164 (len < 64)'),
    E('mark_page_dirty_in_slot', KV, 'kvm_write_guest_offset_cached', 'kvm_main.c:3247 kvm_write_guest_offset_cached'),
    E('vmx_prepare_switch_to_guest', KI, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10812 static_call(kvm_x86_prepare_switch_to_guest) '
      '(returns early: guest_state_loaded)', cmod=KV, check='__SCT__kvm_x86_prepare_switch_to_guest'),
    E('fpregs_assert_state_consistent', V, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10866 vcpu_enter_guest (X86_DEBUG_FPU=y)', cmod=KV),
    E('native_read_msr', V, 'kvm_arch_vcpu_ioctl_run', 'x86.c:10882 get_debugctlmsr -> paravirt_read_msr '
      '(pv_ops.cpu.read_msr, patched to a direct call)', cmod=KV, check='pv_ops+0xb4'),
    # --- entry half of vmx_vcpu_run / vmx_vcpu_enter_exit / __vmx_vcpu_run
    E('__get_current_cr3_fast', V, 'vmx_vcpu_run', 'vmx.c:7276 vmx_vcpu_run', cmod=KI),
    E('cr4_read_shadow', V, 'vmx_vcpu_run', 'vmx.c:7282 vmx_vcpu_run', cmod=KI),
    E('kvm_load_guest_xsave_state', KV, 'vmx_vcpu_run', 'vmx.c:7296 vmx_vcpu_run', cmod=KI),
    E('perf_guest_get_msrs', V, 'vmx_vcpu_run', 'vmx.c:7091 atomic_switch_perf_msrs (inlined)', cmod=KI),
    E('intel_guest_get_msrs', V, 'perf_guest_get_msrs', 'arch/x86/events/core.c:702 static_call(x86_pmu_guest_get_msrs)',
      check='__SCT__x86_pmu_guest_get_msrs'),
    E('clear_atomic_switch_msr', KI, 'vmx_vcpu_run', 'vmx.c:7097 atomic_switch_perf_msrs: GLOBAL_CTRL host==guest'),
    E('kvm_wait_lapic_expire', KV, 'vmx_vcpu_run', 'vmx.c:7309 vmx_vcpu_run', cmod=KI),
    E('__vmx_vcpu_run_flags', KI, 'vmx_vcpu_run', 'vmx.c:7312 vmx_vcpu_run'),
    E('rcu_note_context_switch', V, 'vmx_vcpu_enter_exit', 'include/linux/rcutree.h:32 rcu_virt_note_context_switch '
      '<- kvm_host.h:420 guest_context_enter_irqoff <- guest_state_enter_irqoff (CT not active on this CPU)', cmod=KI),
    E('vmx_update_host_rsp', KI, '__vmx_vcpu_run', 'arch/x86/kvm/vmx/vmenter.S:76 __vmx_vcpu_run'),
    # ---- sometimes
    E('__ct_user_enter', V, 'vmx_vcpu_enter_exit', 'context_tracking.h:78 context_tracking_guest_enter: nohz_full CPUs '
      '(then rcu_note_context_switch is skipped)', cmod=KI, kind=M),
    E('__ct_user_exit', V, 'vmx_vcpu_enter_exit', 'context_tracking.h:86 context_tracking_guest_exit: nohz_full CPUs',
      cmod=KI, kind=M),
    E('vtime_guest_enter', V, 'kvm_arch_vcpu_ioctl_run', 'include/linux/vtime.h:101 guest_timing_enter_irqoff: '
      'vtime accounting active (nohz_full)', cmod=KV, kind=M),
    E('vtime_guest_exit', V, 'kvm_arch_vcpu_ioctl_run', 'vtime.h:109 guest_timing_exit_irqoff: nohz_full', cmod=KV, kind=M),
    E('__rcu_irq_enter_check_tick', V, 'irqentry_enter', 'include/linux/hardirq.h:25 rcu_irq_enter_check_tick: nohz_full',
      kind=M),
    E('vmx_l1d_flush', KI, 'vmx_vcpu_enter_exit', 'vmx.c:7196: L1TF-affected CPUs (the host IRQ sets the flush flag)',
      kind=M),
    E('kvm_arch_has_assigned_device', KV, 'vmx_vcpu_enter_exit', 'vmx.c:7198: CPUs with MMIO-stale-data clearing',
      cmod=KI, kind=M),
    E('clear_bhb_loop', V, '__vmx_vcpu_run', 'vmenter.S:245 CLEAR_BRANCH_HISTORY_VMEXIT: BHI-affected CPUs without '
      'BHI_DIS_S (ALTERNATIVE, not visible in the unpatched binary)', cmod=KI, check='-', kind=M),
    E('add_atomic_switch_msr.constprop.0', KI, 'vmx_vcpu_run', 'vmx.c:7099 atomic_switch_perf_msrs: when a perf MSR '
      'differs host/guest (e.g. DS_AREA/PEBS on Ice Lake+ PEBS-EPT)', kind=M),
    E('native_write_msr', V, 'kvm_load_guest_xsave_state', 'x86.c kvm_load_guest/host_xsave_state wrmsrl(MSR_IA32_XSS) '
      'when guest XSS != host XSS; also update_debugctlmsr', cmod=KV, check='pv_ops+0xbc', kind=M),
    E('kvm_lapic_sync_from_vapic', KV, 'kvm_arch_vcpu_ioctl_run', 'x86.c:11018 vcpu_enter_guest: apic_attention set '
      '(PV-EOI pending from the previous injection)', kind=M),
    E('kvm_read_guest_cached', KV, 'kvm_lapic_sync_from_vapic', 'lapic.c:741 pv_eoi_get_user <- pv_eoi_test_and_clr_pending',
      kind=M),
    E('kvm_read_guest_offset_cached', KV, 'kvm_read_guest_cached', 'kvm_main.c kvm_read_guest_cached', kind=M),
    E('apic_set_eoi', KV, 'kvm_lapic_sync_from_vapic', 'lapic.c:2931 apic_sync_pv_eoi_from_guest: guest already did '
      'the PV EOI', kind=M),
    E('apic_update_ppr', KV, 'apic_set_eoi', 'lapic.c:1327 apic_set_eoi', kind=M),
    E('add_timer_on', V, 'add_interrupt_randomness', 'drivers/char/random.c:1089: once per 1024 IRQs or 1 s', kind=M),
]

# --------------------------------------------------------------------------
def table(title, entries):
    print(f'## {title}\n')
    print('| # | function | module | bytes (map gap / nm -S) | ELF st_size | edge | called from (Debian 6.1.176 source) |')
    print('|---|---|---|---:|---:|---|---|')
    seen = set(); tot = {'main': [0, 0], 'maybe': [0, 0]}; n = {'main': 0, 'maybe': 0}
    rows = {'main': [], 'maybe': []}
    for e in entries:
        key = (e['name'], e['mod'], e.get('addr'))
        if key in seen:
            raise SystemExit(f'duplicate entry {key} in {title}')
        seen.add(key)
        if 'size' in e:
            sz, st = e['size'], e['size']
        else:
            sz, st = size_of(e['name'], e['mod'], e.get('addr'))
        tot[e['kind']][0] += sz
        tot[e['kind']][1] += st if st is not None else sz
        n[e['kind']] += 1
        rows[e['kind']].append((e, sz, st, verify(e)))
    i = 0
    for kind in ('main', 'maybe'):
        if kind == 'maybe':
            print(f'| | **subtotal, common path: {n["main"]} functions** | | **{tot["main"][0]}** | **{tot["main"][1]}** | | |')
            print('| | *called only sometimes:* | | | | | |')
        for e, sz, st, v in rows[kind]:
            i += 1
            nm = e['name'] + (f' @{e["addr"]:#x}' if 'addr' in e else '')
            print(f'| {i} | {nm} | {e["mod"]} | {sz} | {st if st is not None else "n/a"} | {v} | {e["site"]} |')
    print(f'| | **subtotal, sometimes: {n["maybe"]} functions** | | **{tot["maybe"][0]}** | **{tot["maybe"][1]}** | | |')
    print()
    per_mod = {}
    for e, sz, st, v in rows['main']:
        per_mod[e['mod']] = per_mod.get(e['mod'], 0) + sz
    print(f'TOTAL {title.split(":")[0]}: common path {tot["main"][0]} bytes '
          f'(exact st_size sum {tot["main"][1]}); with the "sometimes" functions '
          f'{tot["main"][0] + tot["maybe"][0]} bytes (st_size {tot["main"][1] + tot["maybe"][1]}).')
    print('  common path by module: ' + ', '.join(f'{m} {b}' for m, b in per_mod.items()))
    print()
    return tot

if __name__ == '__main__':
    print(f'System.map used: {MAP_PATH}')
    print(f'vmlinux st_size from: {VMLINUX_DBG if os.path.exists(VMLINUX_DBG) else "(absent)"}')
    print('vmlinux sizes = gap to the next System.map symbol (includes alignment padding); '
          'module sizes = nm -S st_size.\n')
    table('Path A: bare-metal mlx5 MSI-X completion IRQ, user thread interrupted', PATH_A)
    table('Path B: KVM/VMX (no APICv) VFIO MSI-X on the vCPU\'s core, VM exit -> VM entry with injection', PATH_B)
