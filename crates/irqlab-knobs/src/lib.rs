//! The interrupt-handling knobs of irqlab, each declared once, and the
//! profiles as sets of their values.
//!
//! A [`Knob`] says everything the product knows about one knob: its
//! scenario field (`napi.irq_suspend_timeout`), what the kernel or ethtool
//! calls it (`irq-suspend-timeout`, `rx-usecs`), the name `irqlab linux`
//! reports and tunes it by, its unit, the range the kernel accepts and the
//! range the simulator accepts (narrower only where the modelled hardware
//! is, with the reason), the scenario's default, one line of doc and the
//! kernel source the range comes from. Everything else reads [`KNOBS`]:
//! the scenario's defaults and validator (irqlab-core), `irqlab linux`'s
//! knob vocabulary and limits (irqlab-linux), the Python package (through
//! `irqlab._core.knobs()`) and the README's knob tables ([`markdown`]).
//!
//! No dependencies, so that the real-kernel tools need not build the
//! simulator to know a profile.

pub mod markdown;
pub mod profile;
pub mod table;

pub use profile::{Coalesce, EpollParams, PerNapi, Profile, ProfileKnobs};
pub use table::{by_linux_name, by_path, tunable, Knob, Part, Range, Unit, Value, KNOBS};
