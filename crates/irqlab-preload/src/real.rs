//! The functions the shim wraps, found with `dlsym(RTLD_NEXT, ...)`: the
//! next definition after this library in the lookup order, i.e. libc's.
//!
//! Each address is looked up once and kept in an atomic. The library's
//! constructor looks all of them up at load time (before `main`), so that
//! the wrappers, `epoll_wait` first, never call `dlsym` later; the lazy path
//! remains for a wrapper called before the constructor ran (from another
//! library's constructor). Lookups racing on two threads store the same
//! address, so relaxed ordering is enough.

use core::sync::atomic::{AtomicUsize, Ordering};
use libc::{c_int, epoll_event, sigset_t, timespec};

pub type EpollCreate = unsafe extern "C" fn(c_int) -> c_int;
pub type EpollCreate1 = unsafe extern "C" fn(c_int) -> c_int;
pub type EpollCtl = unsafe extern "C" fn(c_int, c_int, c_int, *mut epoll_event) -> c_int;
pub type EpollWait = unsafe extern "C" fn(c_int, *mut epoll_event, c_int, c_int) -> c_int;
pub type EpollPwait =
    unsafe extern "C" fn(c_int, *mut epoll_event, c_int, c_int, *const sigset_t) -> c_int;
pub type EpollPwait2 =
    unsafe extern "C" fn(c_int, *mut epoll_event, c_int, *const timespec, *const sigset_t) -> c_int;

macro_rules! real_fn {
    ($(#[$doc:meta])* $name:ident, $symbol:literal, $ty:ty) => {
        $(#[$doc])*
        pub fn $name() -> Option<$ty> {
            static ADDRESS: AtomicUsize = AtomicUsize::new(0);
            let mut address = ADDRESS.load(Ordering::Relaxed);
            if address == 0 {
                // SAFETY: the symbol name is a NUL-terminated literal.
                address = unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($symbol, "\0").as_ptr().cast()) } as usize;
                if address == 0 {
                    return None;
                }
                ADDRESS.store(address, Ordering::Relaxed);
            }
            // SAFETY: `address` is libc's definition of `$symbol`, whose C
            // prototype is `$ty` (sys/epoll.h).
            Some(unsafe { core::mem::transmute::<usize, $ty>(address) })
        }
    };
}

real_fn!(
    /// libc's `epoll_create`.
    epoll_create, "epoll_create", EpollCreate
);
real_fn!(
    /// libc's `epoll_create1`.
    epoll_create1, "epoll_create1", EpollCreate1
);
real_fn!(
    /// libc's `epoll_ctl`.
    epoll_ctl, "epoll_ctl", EpollCtl
);
real_fn!(
    /// libc's `epoll_wait`.
    epoll_wait, "epoll_wait", EpollWait
);
real_fn!(
    /// libc's `epoll_pwait`.
    epoll_pwait, "epoll_pwait", EpollPwait
);
real_fn!(
    /// libc's `epoll_pwait2` (glibc 2.35+; `None` on an older libc).
    epoll_pwait2, "epoll_pwait2", EpollPwait2
);

/// Look every function up now (called from the library's constructor).
pub fn resolve_all() {
    let _ = (
        epoll_create(),
        epoll_create1(),
        epoll_ctl(),
        epoll_wait(),
        epoll_pwait(),
        epoll_pwait2(),
    );
}
