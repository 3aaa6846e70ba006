//! Locks that a panic elsewhere does not take down with it.
//!
//! A `Mutex` or `RwLock` is poisoned when a thread panics while holding
//! it. Every lock berth takes guards a value that is whole between
//! statements (a map, a counter, a timestamp, a handle): a panicking
//! holder cannot leave it half-written, so the value is used as it is
//! rather than spreading the panic to every later caller. One helper per
//! kind of lock says so once, instead of at every call site.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `m.lock()`, taking the value of a poisoned lock as it is.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `l.read()`, taking the value of a poisoned lock as it is.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// `l.write()`, taking the value of a poisoned lock as it is.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_gives_its_value() {
        let m = Mutex::new(1);
        let l = RwLock::new(2);
        std::thread::scope(|s| {
            let _ = s
                .spawn(|| {
                    let _m = m.lock();
                    let _l = l.write();
                    panic!("poison both");
                })
                .join();
        });
        assert!(m.is_poisoned() && l.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
        *write(&l) += 1;
        assert_eq!(*read(&l), 3);
    }
}
