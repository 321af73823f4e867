//! Netlink message definitions, without any I/O (STYLE.md "Kernel
//! interfaces"): each message is a value that can be emitted to the exact
//! bytes the kernel expects and parsed back from the bytes the kernel sends.
//! The socket that carries them is `crate::socket`.
//!
//! - [`attr`]: `struct nlattr` encoding and parsing;
//! - [`message`]: `struct nlmsghdr`, `NLMSG_ERROR` / `NLMSG_DONE` and extended acks;
//! - [`genl`]: `struct genlmsghdr`, generic netlink framing and the `nlctrl`
//!   family lookup (`CTRL_CMD_GETFAMILY`);
//! - [`netdev`]: the "netdev" family (`napi-get`, `napi-set`, `queue-get`);
//! - [`qstats`]: the "netdev" family's per-queue statistics (`qstats-get`);
//! - [`ethtool`]: the "ethtool" family (`coalesce-get`, `coalesce-set`);
//! - [`route`]: rtnetlink's route lookup (`RTM_GETROUTE`).
//!
//! Constants carry the kernel's names (include/uapi/linux/*.h) and the
//! kernel's values; enums keep an `Other(n)` variant for values a newer
//! kernel may send.

pub mod attr;
pub mod ethtool;
pub mod genl;
pub mod message;
pub mod netdev;
pub mod qstats;
pub mod route;

/// Bytes that are not the message they should be. The message is one
/// sentence; it names the part of the message that is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("the {what} is truncated ({need} bytes needed, {have} present)")]
    Truncated { what: &'static str, need: usize, have: usize },
    #[error("attribute {kind} has {len} bytes, which is not a valid {expected}")]
    AttrLength { kind: u16, len: usize, expected: &'static str },
    #[error("attribute {kind} is not valid UTF-8 text")]
    NotUtf8 { kind: u16 },
    #[error("the {what} lacks its required attribute {attr}")]
    Missing { what: &'static str, attr: &'static str },
    #[error("the message has type {got} where type {expected} was expected")]
    UnexpectedType { got: u16, expected: u16 },
    #[error("the message says it is {declared} bytes long but {have} bytes were given")]
    Length { declared: usize, have: usize },
}
