//! Whether this process may change network settings: the kernel's
//! `napi-set` and `coalesce-set` are `admin-perm` operations (CAP_NET_ADMIN
//! in the device's network namespace). Checked up front so that the refusal
//! is one clear sentence instead of an EPERM half-way through.

use crate::error::Error;

/// `CAP_NET_ADMIN` (include/uapi/linux/capability.h).
pub const CAP_NET_ADMIN: u32 = 12;

/// Refuse `action` (e.g. "irqlab linux apply") unless the effective
/// capabilities include CAP_NET_ADMIN. Where /proc cannot say, an effective
/// uid of 0 is taken as enough.
pub fn require_net_admin(action: &str) -> Result<(), Error> {
    let allowed = match effective_capabilities() {
        Some(caps) => caps & (1u64 << CAP_NET_ADMIN) != 0,
        // SAFETY: geteuid has no preconditions and cannot fail.
        None => (unsafe { libc::geteuid() }) == 0,
    };
    if allowed {
        Ok(())
    } else {
        Err(Error::NotPermitted { action: action.to_string() })
    }
}

/// The `CapEff` mask of /proc/self/status.
fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_cap_eff(&status)
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_eff_is_read_from_proc_status_text() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
    }
}
