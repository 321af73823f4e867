//! `cargo run --example run -- SCENARIO [key=value]...`: print a summary as JSON.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run SCENARIO [profile=P] [key=value]...");
    let mut s = irqlab_core::Scenario::from_path(std::path::Path::new(&path)).unwrap();
    for a in args {
        if let Some(p) = a.strip_prefix("profile=") {
            s.set_profile(p).unwrap();
        } else {
            s.set_pair(&a).unwrap();
        }
    }
    let r = irqlab_core::run(&s).unwrap();
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
}
