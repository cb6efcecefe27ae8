//! A box that is usually empty: one null pointer while it is, and dropped with one inline test, its
//! contents out of line. For the rare parts of a value built on every event (the failures of its
//! deliveries, what its silenceable listeners answered), so the common case builds and drops one
//! word, and the drop glue of the value holding it stays small enough to be inlined.

/// `None` until something rare happens; see the module doc.
pub(crate) struct ColdBox<T>(Option<Box<T>>);

impl<T> ColdBox<T> {
    #[inline(always)]
    pub(crate) const fn empty() -> ColdBox<T> {
        ColdBox(None)
    }

    pub(crate) fn new(value: T) -> ColdBox<T> {
        ColdBox(Some(Box::new(value)))
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_deref()
    }

    pub(crate) fn get_mut(&mut self) -> Option<&mut T> {
        self.0.as_deref_mut()
    }

    /// The contents, made with `make` first when the box is empty.
    pub(crate) fn get_or_insert_with(&mut self, make: impl FnOnce() -> T) -> &mut T {
        self.0.get_or_insert_with(|| Box::new(make()))
    }

    /// The contents, taken out; the box is left empty.
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take().map(|value| *value)
    }
}

impl<T> Default for ColdBox<T> {
    fn default() -> ColdBox<T> {
        ColdBox::empty()
    }
}

impl<T> Drop for ColdBox<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_cold(self.0.take());
        }
    }
}

/// Drops `value` out of line: for the rare paths of an inline drop.
#[cold]
#[inline(never)]
pub(crate) fn drop_cold<T>(value: T) {
    drop(value);
}
