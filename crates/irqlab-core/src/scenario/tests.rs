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
    assert_eq!(e, "scenario field `cpu.app_cores` must be a whole number from 1 to 1024 (got the string \"many\")");
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
    check_profile_table(&table);
}

/// Cai & Karsten's configurations as mapped (docs/calibration.md, "The
/// second measurement"): irq-batching is the cover letter's `defer20`,
/// kernel-polling its `suspend0`; both keep adaptive's NIC coalescing.
#[test]
fn profiles_match_the_cover_letter_cases_cai_and_karsten_map_to() {
    let table = [
        ("irq-batching", true, 8, 100, 20_000, 0, 0, false, true),
        ("kernel-polling", true, 8, 0, 0, 20_000_000, 0, true, true),
    ];
    check_profile_table(&table);
    for name in ["irq-batching", "kernel-polling"] {
        let mut s = Scenario::from_toml_str(MIN).unwrap();
        s.set_profile(name).unwrap();
        let c = s.config();
        assert_eq!(c.coalesce.rx_frames, 128, "{name}");
        assert!(c.coalesce.cqe_mode_rx, "{name}");
    }
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    s.set_profile("irq-batching").unwrap();
    assert_eq!(s.config().epoll.busy_poll_budget, 0);
    s.set_profile("kernel-polling").unwrap();
    assert_eq!(s.config().epoll.busy_poll_budget, 64);
}

#[test]
fn every_profile_is_listed_once_by_name_thesis_four_first() {
    let names: Vec<_> = Profile::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend", "irq-batching", "kernel-polling"]
    );
    for p in Profile::ALL {
        assert_eq!(Profile::by_name(p.name()), Ok(p));
    }
    assert!(Profile::by_name("fast").unwrap_err().ends_with("irq-batching, kernel-polling"));
}

type ProfileRow = (&'static str, bool, u32, u32, u64, u64, u32, bool, bool);

fn check_profile_table(table: &[ProfileRow]) {
    for &(name, adaptive, usecs, defer, gro, suspend, bp_usecs, prefer, blocking) in table {
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

/// No Rust type name (`u32`, `struct LoadCfg`, `f64`) reaches the user.
#[test]
fn type_errors_speak_of_numbers_and_tables_not_rust_types() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    for (key, value, want) in [
        ("napi.weight", "-1", "scenario field `napi.weight` must be a whole number from 1 to 1024 (got -1)"),
        ("load.qps", "\"fast\"", "scenario field `load.qps` must be a number from 1 to 1000000000 (got the string \"fast\")"),
        ("load", "5", "scenario field `load` must be a table of fields (got 5)"),
        ("nic.tx_completion_irqs", "3", "scenario field `nic.tx_completion_irqs` must be true or false (got 3)"),
        ("app.service", "4", "scenario field `app.service` must be a table with a `dist` key (got 4)"),
        ("nic.irq_routing", "3", "scenario field `nic.irq_routing` must be \"aligned\" or \"packed\""),
        ("app.service", "{ dist = \"fixed\" }", "scenario field `app.service`: missing field `cycles`"),
    ] {
        let e = s.set(key, value).unwrap_err().to_string();
        assert_eq!(e, want, "{key}={value}");
    }
    let e = Scenario::from_toml_str("[load]\ndepth = \"x\"\n").unwrap_err().to_string();
    assert!(!e.contains("u32") && e.contains("from 1 to 1024"), "{e}");
}

#[test]
fn an_integer_too_large_is_a_number_out_of_range_not_a_string() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s.set("cpu.app_cores", "99999999999999999999").unwrap_err().to_string();
    assert_eq!(e, "scenario field `cpu.app_cores` must be a whole number from 1 to 1024 (got 99999999999999999999)");
    let e = s.set("load.qps", "1.2.3").unwrap_err().to_string();
    assert!(e.contains("`load.qps`") && !e.contains("invalid type: string"), "{e}");
    // A bare word is still a string.
    s.set("load.interarrival", "fb_ia").unwrap();
    s.set("name", "my-test").unwrap();
}

#[test]
fn an_override_value_is_one_value_on_one_line() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s.set_pair("load.qps=300000\n[cpu]\napp_cores=1").unwrap_err().to_string();
    assert_eq!(e, "override `load.qps` must be one value on one line");
    assert!(s.config().load.qps.is_none() && s.config().cpu.app_cores == 2, "nothing applied");
    assert!(s.set("load.qps", "300000\r").is_err());
}

#[test]
fn toml_syntax_errors_give_line_and_column_on_one_line() {
    let e = Scenario::from_toml_str("name = \"t\"\n[cpu]\napp_cores = = 3\n").unwrap_err().to_string();
    assert!(e.starts_with("the scenario is not valid TOML at line 3, column 13: "), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = Scenario::from_toml_str("[cpu\n").unwrap_err().to_string();
    assert!(e.contains("line 1, column 5") && !e.contains('\n'), "{e}");
}

#[test]
fn run_profile_cannot_be_overridden() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    for value in ["busy-wait", "bogus"] {
        let e = s.set("run.profile", value).unwrap_err().to_string();
        assert!(e.contains("--profile") && e.contains("with_profile"), "{e}");
        let e = s.set_pairs(&[format!("run.profile={value}")]).unwrap_err().to_string();
        assert!(e.contains("--profile"), "{e}");
    }
    // Nor by replacing the whole section.
    let e = s.set("run", "{ profile = \"busy-wait\" }").unwrap_err().to_string();
    assert!(e.contains("--profile"), "{e}");
    assert!(s.profile().is_none());
    // The file's own run.profile still selects the profile, and other run fields override fine.
    let mut f = Scenario::from_toml_str(&format!("{MIN}[run]\nprofile = \"busy-wait\"\n")).unwrap();
    assert_eq!(f.profile().unwrap().name(), "busy-wait");
    f.set("run.seed", "5").unwrap();
    assert!(Scenario::from_toml_str(&format!("{MIN}[run]\nprofile = \"bogus\"\n")).is_err());
}

#[test]
fn connections_are_counted_in_64_bits_against_the_documented_limit() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    // 8 × 8192 × 65537 wraps to 65536 in 32 bits.
    let e = s
        .set_pairs(&["load.clients=8", "load.threads_per_client=8192", "load.connections_per_thread=65537"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`load.connections`") && e.contains("4295032832") && e.contains("1000000"), "{e}");
    s.set_pairs(&["load.clients=10", "load.threads_per_client=100", "load.connections_per_thread=1000"]).unwrap();
    assert_eq!(s.config().load.connections(), 1_000_000);
}

#[test]
fn requests_in_flight_are_bounded() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s
        .set_pairs(&["load.clients=10", "load.threads_per_client=1000", "load.connections_per_thread=100", "load.depth=17"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`load.connections`") && e.contains("`load.depth`") && e.contains("17000000"), "{e}");
    let e = s.set_pairs(&["load.qps=1e9", "nic.dma_latency_ns=20000000"]).unwrap_err().to_string();
    assert!(e.contains("`load.qps`") && e.contains("`nic.dma_latency_ns`") && e.contains("at most 1000000"), "{e}");
    s.set_pairs(&["load.qps=1e9", "nic.wire_latency_ns=500000", "nic.dma_latency_ns=0"]).unwrap();
}

#[test]
fn a_closed_loop_that_takes_no_time_is_rejected() {
    let zero = "[costs]\nrx_packet_cycles = 0\nrecv_cycles = 0\nrecv_cycles_per_request = 0\nsend_cycles = 0\n\
                [app]\nservice = { dist = \"fixed\", cycles = 0 }\n\
                [nic]\nwire_latency_ns = 0\ndma_latency_ns = 0\n";
    let e = Scenario::from_toml_str(zero).unwrap_err().to_string();
    assert!(e.starts_with("scenario field `nic.wire_latency_ns` must be above 0 in a closed loop"), "{e}");
    let mut open = Scenario::from_toml_str(&zero.replace("[nic]", "[load]\nqps = 1000\n[nic]")).unwrap();
    open.set("load.think_time_ns", "0").unwrap();
    let mut s = Scenario::from_toml_str(&zero.replace("wire_latency_ns = 0", "wire_latency_ns = 1")).unwrap();
    assert!(s.set("nic.wire_latency_ns", "0").is_err());
}

#[test]
fn scenario_files_must_be_small_regular_files() {
    let e = Scenario::from_path(std::path::Path::new("/dev/zero")).unwrap_err().to_string();
    assert_eq!(e, "cannot read scenario file /dev/zero: it is not a regular file");
    let dir = std::env::temp_dir().join(format!("irqlab-big-{}", std::process::id()));
    std::fs::write(&dir, vec![b'#'; (MAX_SCENARIO_BYTES + 1) as usize]).unwrap();
    let e = Scenario::from_path(&dir).unwrap_err().to_string();
    std::fs::remove_file(&dir).unwrap();
    assert!(e.ends_with("it is larger than 4194304 bytes"), "{e}");
}

#[test]
fn knob_ranges_defaults_and_sentences_are_the_knob_tables() {
    use irqlab_knobs::{Value, KNOBS};
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let defaults = serde_json::to_value(Scenario::from_toml_str("").unwrap().config()).unwrap();
    for k in KNOBS {
        if k.part == irqlab_knobs::Part::Steering {
            // A list of CPUs in a scenario, a mask for a policy (model/policy.rs).
            continue;
        }
        let (section, field) = k.path.split_once('.').unwrap();
        let default = &defaults[section][field];
        match k.default {
            Value::Bool(b) => assert_eq!(default, &serde_json::json!(b), "{}", k.path),
            Value::Int(n) => assert_eq!(default, &serde_json::json!(n), "{}", k.path),
        }
        if k.is_bool() {
            continue;
        }
        let f = validate::INT_FIELDS.iter().find(|f| f.path == k.path).expect(k.path);
        assert_eq!((f.lo, f.hi, f.knob.map(|f| f.path)), (k.sim.min, k.sim.max, Some(k.path)));
        if k.path.starts_with("itr.") {
            continue; // [itr] applies to an 82599 scenario only
        }
        if k.sim.max < i64::MAX as u64 {
            let e = s.set(k.path, &(k.sim.max + 1).to_string()).unwrap_err().to_string();
            assert_eq!(e, format!("scenario field `{}` {}", k.path, k.out_of_range(k.sim.max + 1)));
        }
    }
    // One range for irq_suspend_timeout, the kernel's ktime one: its
    // largest value is accepted, as irqlab linux accepts it.
    s.set("napi.irq_suspend_timeout", "9223372036854775807").unwrap();
    let e = s.set("coalesce.rx-usecs", "5000").unwrap_err().to_string();
    assert!(e.ends_with("(got 5000): the modelled ConnectX-4's mlx5 driver refuses more (MLX5E_MAX_COAL_TIME, drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c)"), "{e}");
}

#[test]
fn the_disruption_model_needs_its_footprints_and_checks_its_ranges() {
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    let e = s.set("microarch.ipc_model", "disruption").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `microarch.thread_code_bytes` must be given"), "{e}");
    let e = s.set("microarch.ipc_model", "sometimes").unwrap_err().to_string();
    assert!(e.contains("`microarch.ipc_model`"), "{e}");
    let e = s.set("microarch.l1i_bytes", "0").unwrap_err().to_string();
    assert_eq!(e, "scenario field `microarch.l1i_bytes` must be between 1024 and 16777216 (got 0)");
    let e = s.set("microarch.cpi_warm", "0").unwrap_err().to_string();
    assert!(e.contains("`microarch.cpi_warm`") && e.contains("between"), "{e}");
    // A CPI or an instruction scale means nothing to costs that are cycles.
    let e = s.set("microarch.instructions_scale", "0.5").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `microarch.instructions_scale` applies only when"), "{e}");
    let e = s.set("microarch.costs_cpi", "1").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `microarch.costs_cpi` applies only when"), "{e}");
    s.set("microarch.thread_code_bytes", "24576").unwrap();
    s.set("microarch.ipc_model", "disruption").unwrap();
    s.set("microarch.instructions_scale", "0.5").unwrap();
    let e = s.set("microarch.instructions_scale", "0").unwrap_err().to_string();
    assert!(e.contains("between"), "{e}");
}

#[test]
fn itr_min_effect_is_checked_whatever_the_policy() {
    // issue 62, item 12: under `ixgbe` nan, -0.01 and 1e7 were accepted.
    let base = "[nic]\nkind = \"82599\"\n[itr]\npolicy = \"ixgbe\"\n";
    for bad in ["nan", "-0.01", "1e7", "inf"] {
        let e = Scenario::from_toml_str(&format!("{base}min_effect = {bad}\n")).unwrap_err().to_string();
        assert!(e.starts_with("scenario field `itr.min_effect` must be a number from 0 to 0.5"), "{e}");
    }
    for good in ["0", "0.01", "0.5"] {
        Scenario::from_toml_str(&format!("{base}min_effect = {good}\n")).unwrap();
    }
    let mut s = Scenario::from_toml_str(base).unwrap();
    let e = s.set("itr.min_effect", "0.6").unwrap_err().to_string();
    assert!(e.contains("`itr.min_effect`") && e.ends_with("(got 0.6)"), "{e}");
}

#[test]
fn etc_size_tables_take_no_other_key() {
    // issue 62, item 12: keys beside dist = "etc" were ignored.
    let e = Scenario::from_toml_str("[load]\nkey_size = { dist = \"etc\", foo = 1 }\n").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `load.key_size.foo` is not a field: with dist = \"etc\""), "{e}");
    let e = Scenario::from_toml_str("[load.value_size]\ndist = \"etc\"\nbytes = 5\n").unwrap_err().to_string();
    assert!(e.starts_with("scenario field `load.value_size.bytes` applies to dist = \"fixed\" only"), "{e}");
    let mut s = Scenario::from_toml_str(MIN).unwrap();
    assert!(s.set("load.key_size.bytes", "5").is_err());
    assert_eq!(s.config().load.key_size, SizeCfg::Etc);
    Scenario::from_toml_str("[load]\nkey_size = { dist = \"etc\" }\nvalue_size = { dist = \"fixed\", bytes = 5 }\n")
        .unwrap();
    let e = Scenario::from_toml_str("[load]\nvalue_size = { dist = \"fixed\", bytes = 5, foo = 1 }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("foo"), "{e}");
}

#[test]
fn an_empty_scenario_file_is_refused() {
    // issue 62, item 12: a zero-byte file ran as every default.
    let dir = std::env::temp_dir().join(format!("irqlab-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [("empty.toml", ""), ("comments.toml", "# nothing\n\n  # here\n")] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let e = Scenario::from_path(&p).unwrap_err().to_string();
        assert_eq!(e, format!("cannot read scenario file {}: {EMPTY_FILE}", p.display()));
    }
    let p = dir.join("table.toml");
    std::fs::write(&p, "[load]\n").unwrap();
    Scenario::from_path(&p).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // The text itself may be empty: every default, as the API documents.
    Scenario::from_toml_str("").unwrap();
}
