//! A progress bar on stderr (hidden when stderr is not a terminal, and in tests).

use indicatif::{ProgressBar, ProgressStyle};

/// Progress of a count of items, shareable among threads.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `total` items labelled `what` (e.g. "pixels").
    pub fn new(total: u64, what: &str) -> Progress {
        let bar = ProgressBar::new(total);
        let template =
            format!("{{msg:>10}} [{{bar:40}}] {{human_pos}}/{{human_len}} {what} ({{elapsed}})");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar: Some(bar) }
    }

    /// A progress that shows nothing.
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// [`new`](Self::new) when `show`, else [`hidden`](Self::hidden).
    pub fn shown_if(show: bool, total: u64, what: &str) -> Progress {
        if show {
            Progress::new(total, what)
        } else {
            Progress::hidden()
        }
    }

    /// Count `n` more items done.
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// Set the label shown before the bar.
    pub fn set_message(&self, message: String) {
        if let Some(b) = &self.bar {
            b.set_message(message);
        }
    }

    /// Stop drawing and remove the bar (the caller prints a summary instead).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
