//! The write lock's queue on PostgreSQL, against a real server: a transaction waiting for the
//! lock takes it, as it is released, before one that asked for it later. The archive's pace
//! rests on it (`archive/batches.rs`, `Pace::QUEUED_WAITERS`): a writer that waits during a
//! batch runs before the next batch, whatever the gap between the two.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::storage::Storage;
use crate::{Config, Ledger};

#[test]
fn a_writer_waiting_for_the_lock_takes_it_before_one_that_asks_later() -> crate::Result<()> {
    let Some((mut admin, schema, url)) = super::plans::schema_of_its_own("lock_queue")? else {
        return Ok(());
    };
    drop(Ledger::init(&url)?);
    let open = || Storage::open(std::path::Path::new(&url), &Config::default());
    let order = Arc::new(Mutex::new(Vec::new()));
    let writer = |name: &'static str, after: Duration, hold: Duration| {
        let storage = open();
        let order = Arc::clone(&order);
        thread::spawn(move || -> crate::Result<()> {
            let storage = storage?;
            thread::sleep(after);
            storage.write(|_| {
                order.lock().expect("not poisoned").push(name);
                thread::sleep(hold);
                Ok(())
            })
        })
    };
    // The batch holding the lock; a writer that begins waiting during it; the next batch,
    // which asks while the writer waits.
    let batch = writer("batch", Duration::ZERO, Duration::from_millis(600));
    let waiting = writer("writer", Duration::from_millis(150), Duration::ZERO);
    let next = writer("next batch", Duration::from_millis(350), Duration::ZERO);
    for handle in [batch, waiting, next] {
        handle.join().expect("the thread ends")?;
    }
    assert_eq!(
        *order.lock().expect("not poisoned"),
        ["batch", "writer", "next batch"]
    );
    assert!(open()?.queues_lock_waiters());
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    Ok(())
}
