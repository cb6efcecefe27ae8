//! The tracing -> notify layer's per-callsite cache: for each tracing callsite, its notify event
//! name (mapped once) and, on the global notifier, a notify [`Callsite`] that caches whether
//! anybody listens. So a span or event nobody listens to costs one slot load, one pointer
//! comparison and one atomic load.

use std::sync::atomic::{AtomicPtr, Ordering};

use notify_core::{event::Callsite, Notifier};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tracing_core::Metadata;

use crate::names::EventNames;

/// Slots of the direct-mapped cache (a power of two). A callsite whose slot another one holds
/// takes the slow path (a lock and a hash lookup) until it wins the slot back.
const SLOTS: usize = 512;

/// What the layer knows about one tracing callsite.
pub(crate) struct Site {
    /// The address of the callsite's metadata (its identity).
    metadata: usize,
    /// The notify event name, or `None` when the callsite is not published.
    target: Option<Target>,
}

pub(crate) struct Target {
    /// The event name; leaked once per tracing callsite (callsites are `static`s, so bounded).
    pub(crate) name: &'static str,
    /// On the global notifier: a callsite of that name (leaked, as every `static` callsite is).
    pub(crate) callsite: Option<&'static Callsite>,
}

impl Site {
    pub(crate) fn target(&self) -> Option<&Target> {
        self.target.as_ref()
    }
}

impl Target {
    /// True when an event of this name would reach somebody now.
    #[inline]
    pub(crate) fn is_enabled(&self, notifier: &Notifier) -> bool {
        match self.callsite {
            Some(callsite) => callsite.is_enabled(),
            None => notifier.listening(self.name),
        }
    }
}

pub(crate) struct Sites {
    slots: Box<[AtomicPtr<Site>]>,
    /// Every site, by metadata address. The boxes are never removed or dropped before `Sites`
    /// drops, so pointers to them in `slots` stay valid as long as `self`.
    all: Mutex<FxHashMap<usize, Box<Site>>>,
    names: EventNames,
    global: bool,
}

impl Sites {
    pub(crate) fn new(names: EventNames, global: bool) -> Sites {
        Sites {
            slots: (0..SLOTS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            all: Mutex::new(FxHashMap::default()),
            names,
            global,
        }
    }

    /// The site of `meta`, mapping it on first sight.
    #[inline]
    pub(crate) fn get(&self, meta: &'static Metadata<'static>) -> &Site {
        let address = meta as *const Metadata<'static> as usize;
        let slot = &self.slots[(address >> 4) & (SLOTS - 1)];
        let site = slot.load(Ordering::Acquire);
        // SAFETY: a non-null slot points into a `Box<Site>` owned by `self.all`, which never removes
        // nor drops its boxes while `self` lives; the box was fully written before its address
        // was published with `Release` (in `slow`), and this `Acquire` load pairs with it.
        if let Some(site) = unsafe { site.as_ref() } {
            if site.metadata == address {
                return site;
            }
        }
        self.slow(meta, address, slot)
    }

    #[cold]
    fn slow(&self, meta: &'static Metadata<'static>, address: usize, slot: &AtomicPtr<Site>) -> &Site {
        let mut all = self.all.lock();
        let site = all.entry(address).or_insert_with(|| {
            let target = self.names.name(meta).map(|name| {
                let name: &'static str = Box::leak(name.into_boxed_str());
                let callsite = self.global.then(|| &*Box::leak(Box::new(Callsite::new(name))));
                Target { name, callsite }
            });
            Box::new(Site {
                metadata: address,
                target,
            })
        });
        let pointer: *const Site = &**site;
        slot.store(pointer.cast_mut(), Ordering::Release);
        // SAFETY: as in `get`: the box lives in `self.all` until `self` drops.
        unsafe { &*pointer }
    }

    /// True when the sites use notify callsites of the global notifier.
    pub(crate) fn is_global(&self) -> bool {
        self.global
    }

    /// How many callsites were mapped (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.all.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_core::callsite::DefaultCallsite;
    use tracing_core::field::FieldSet;
    use tracing_core::{Kind, Level};

    /// Callsites made at run time (leaked), so the test can make more than there are slots.
    fn callsite(i: usize) -> &'static Metadata<'static> {
        let cs: &'static DefaultCallsite =
            Box::leak(Box::new(DefaultCallsite::new(Box::leak(Box::new(Metadata::new(
                Box::leak(format!("span{i}").into_boxed_str()),
                "sites_test",
                Level::INFO,
                None,
                None,
                None,
                FieldSet::new(&[], tracing_core::identify_callsite!(&DUMMY)),
                Kind::SPAN,
            ))))));
        tracing_core::Callsite::metadata(cs)
    }

    static DUMMY: DefaultCallsite = DefaultCallsite::new(&DUMMY_META);
    static DUMMY_META: Metadata<'static> = tracing_core::metadata! {
        name: "dummy",
        target: "sites_test",
        level: Level::INFO,
        fields: &[],
        callsite: &DUMMY,
        kind: Kind::SPAN,
    };

    #[test]
    fn colliding_callsites_each_get_their_own_name_from_many_threads() {
        let sites = Sites::new(EventNames::default(), false);
        let metas: Vec<_> = (0..3 * SLOTS).map(callsite).collect();
        std::thread::scope(|s| {
            for t in 0..2 {
                let (sites, metas) = (&sites, &metas);
                s.spawn(move || {
                    for round in 0..3 {
                        for (i, meta) in metas.iter().enumerate().skip((t + round) % 2) {
                            let site = sites.get(meta);
                            assert_eq!(site.target().unwrap().name, format!("span{i}.sites_test"));
                        }
                    }
                });
            }
        });
        assert_eq!(sites.len(), 3 * SLOTS);
    }
}
