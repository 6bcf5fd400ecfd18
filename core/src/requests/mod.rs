//! Requests: pulling a launch's requests, routing them, filling them on a worker pool.

/// A batch of fills started by `process_requests` (TEMPORARY SKELETON).
#[derive(Clone)]
pub struct Ticket {
    _private: (),
}

impl Ticket {
    /// Block until every task of the batch has finished.
    pub fn wait(&self) {
        todo!()
    }
    /// Tasks in the batch.
    pub fn tasks_total(&self) -> usize {
        todo!()
    }
    /// Tasks not finished yet.
    pub fn tasks_remaining(&self) -> usize {
        todo!()
    }
}
