use super::*;

const MIN: &str = r#"
name = "t"
[cpu]
app_cores = 2
[load]
clients = 1
threads_per_client = 1
connections_per_thread = 4
"#;

#[test]
fn minimal_scenario_resolves_with_defaults() {
    let s = Scenario::from_toml_str(MIN).unwrap();
    assert_eq!(s.config().cpu.app_cores, 2);
    assert_eq!(s.config().queues(), 2);
    assert_eq!(s.config().napi.weight, 64);
    assert!(s.config().load.qps.is_none());
}

#[test]
fn unknown_keys_are_errors_naming_the_field() {
    let e = Scenario::from_toml_str("[cpu]\napp_corez = 3\n").unwrap_err().to_string();
    assert!(e.contains("app_corez"), "{e}");
    assert!(e.contains("`cpu.app_corez`"), "{e}");
    let e = Scenario::from_toml_str("[bogus]\nx = 1\n").unwrap_err().to_string();
    assert!(e.contains("bogus"), "{e}");
}

#[test]
fn out_of_range_values_name_field_and_range() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s.set("nic.rx-ring-size", "0").unwrap_err().to_string();
    assert_eq!(e, "scenario field `nic.rx-ring-size` must be between 1 and 65536 (got 0)");
    let e = s.set("load.qps", "-5").unwrap_err().to_string();
    assert!(e.contains("`load.qps`") && e.contains("between"), "{e}");
    let e = s.set("coalesce.rx-usecs", "5000").unwrap_err().to_string();
    assert!(e.contains("`coalesce.rx-usecs`") && e.contains("4095"), "{e}");
    // A failed override leaves the scenario as it was.
    assert_eq!(s.config().nic.rx_ring_size, 1024);
}

#[test]
fn type_errors_are_reported() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s.set("cpu.app_cores", "many").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `cpu.app_cores`: invalid type"), "{e}");
    assert!(s.set_pair("novalue").is_err());
    assert!(s.set("a..b", "1").is_err());
}

#[test]
fn overrides_win_over_profiles_in_any_order() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    s.set("napi.gro_flush_timeout", "1234").unwrap();
    s.set_profile("irq-suspend").unwrap();
    assert_eq!(s.config().napi.gro_flush_timeout, 1234);
    assert_eq!(s.config().napi.irq_suspend_timeout, 20_000_000);
    assert!(s.config().epoll.prefer_busy_poll);
    s.set_profile("no-coalescing").unwrap();
    assert_eq!(s.config().napi.irq_suspend_timeout, 0);
    assert!(!s.config().coalesce.adaptive_rx);
    assert!(s.set_profile("fast").unwrap_err().to_string().contains("no-coalescing, adaptive-coalescing"));
}

#[test]
fn profiles_match_the_thesis_appendix() {
    let table = [
        ("no-coalescing", false, 1, 0, 0, 0, 0, false, true),
        ("adaptive-coalescing", true, 8, 0, 0, 0, 0, false, true),
        ("busy-wait", true, 8, 100, 5_000_000, 0, 1000, true, false),
        ("irq-suspend", true, 8, 100, 20_000, 20_000_000, 0, true, true),
    ];
    for (name, adaptive, usecs, defer, gro, suspend, bp_usecs, prefer, blocking) in table {
        let mut s = Scenario::from_toml_str(MIN).unwrap();
        s.set_profile(name).unwrap();
        let c = s.config();
        assert_eq!(c.coalesce.adaptive_rx, adaptive, "{name}");
        assert_eq!(c.coalesce.rx_usecs, usecs, "{name}");
        assert_eq!(c.napi.napi_defer_hard_irqs, defer, "{name}");
        assert_eq!(c.napi.gro_flush_timeout, gro, "{name}");
        assert_eq!(c.napi.irq_suspend_timeout, suspend, "{name}");
        assert_eq!(c.epoll.busy_poll_usecs, bp_usecs, "{name}");
        assert_eq!(c.epoll.prefer_busy_poll, prefer, "{name}");
        assert_eq!(c.epoll.blocking, blocking, "{name}");
    }
}

#[test]
fn overrides_valid_only_together_are_accepted_as_a_batch() {
    let text = format!("{MIN}[nic]\nqueues = 2\n");
    let mut s = Scenario::from_toml_str(&text).unwrap();
    assert!(s.set_pair("cpu.app_cores=4").is_err());
    s.set_pairs(&["cpu.app_cores=4", "nic.queues=4"]).unwrap();
    assert_eq!(s.config().queues(), 4);
    assert!(s.set_pairs(&["cpu.app_cores=8", "nic.queues=x"]).is_err());
    assert_eq!(s.config().cpu.app_cores, 4, "a failed batch changes nothing");
}

#[test]
fn open_loop_is_selected_by_load_qps() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    s.set_pair("load.qps=300000").unwrap();
    assert_eq!(s.config().load.qps, Some(300000.0));
}

#[test]
fn thesis_scenario_parses() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/thesis/bare-metal.toml");
    let s = Scenario::from_path(&p).unwrap();
    assert_eq!(s.config().load.connections(), 768);
    assert_eq!(s.profile().unwrap().name(), "irq-suspend");
}
