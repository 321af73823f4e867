//! `cargo run -p irqlab-knobs --example markdown`: the README's knob tables
//! with their markers (the same text as `python -m irqlab.knobs --markdown`).
fn main() {
    print!("{}", irqlab_knobs::markdown::block());
}
