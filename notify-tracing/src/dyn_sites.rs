//! tracing callsites made at run time for notify event names (notify -> tracing).
//!
//! tracing describes every span and event by a `'static` [`Metadata`] with a fixed set of field
//! names. notify event names and payload keys are known only at run time, so this module makes one
//! callsite per event name and kind (span or event), leaked like a `static` and registered with
//! `tracing_core::callsite::register` so filters and interest caching work as for any callsite.
//! Its fields are [`BRIDGE_FIELD`] and the payload keys seen so far for that name; a new key makes
//! a new callsite with the union for later events. At most [`MAX_SITES`] callsites are made; past
//! that, events use one shared overflow callsite (`target: "notify"`, name `"event"`) with the
//! event name in `notify.name` and the payload's Debug text in `notify.payload`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

use notify_core::Payload;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use tracing_core::callsite::{Callsite, Identifier};
use tracing_core::field::FieldSet;
use tracing_core::subscriber::Interest;
use tracing_core::{Kind, Level, Metadata};

use crate::BRIDGE_FIELD;

/// The most callsites made (each is a few hundred bytes, never freed).
pub(crate) const MAX_SITES: usize = 4096;

/// The field of the overflow callsite holding the event name.
pub(crate) const NAME_FIELD: &str = "notify.name";
/// The field of the overflow callsite holding the payload's Debug text.
pub(crate) const PAYLOAD_FIELD: &str = "notify.payload";
/// The field of finish events holding the duration in nanoseconds.
pub(crate) const DURATION_FIELD: &str = "notify.duration_ns";

const NEVER: u8 = 0;
const SOMETIMES: u8 = 1;
const ALWAYS: u8 = 2;

/// One run-time callsite.
pub(crate) struct DynSite {
    metadata: OnceLock<Metadata<'static>>,
    interest: AtomicU8,
    /// The payload keys among the fields (every field but the bridge's own), in field order.
    keys: &'static [&'static str],
    /// True for the overflow callsite.
    pub(crate) overflow: bool,
    /// The notify event name (empty for the overflow callsite), for the per-thread cache.
    event_name: &'static str,
}

impl Callsite for DynSite {
    fn set_interest(&self, interest: Interest) {
        let value = if interest.is_never() {
            NEVER
        } else if interest.is_always() {
            ALWAYS
        } else {
            SOMETIMES
        };
        self.interest.store(value, Ordering::Relaxed);
    }

    fn metadata(&self) -> &Metadata<'_> {
        self.metadata
            .get()
            .expect("a DynSite is registered after its metadata is set")
    }
}

impl DynSite {
    #[allow(clippy::too_many_arguments)]
    fn make_unregistered(
        event_name: &'static str,
        name: &'static str,
        target: &'static str,
        level: Level,
        kind: Kind,
        fields: Vec<&'static str>,
        keys_from: usize,
        overflow: bool,
    ) -> &'static DynSite {
        let fields: &'static [&'static str] = Box::leak(fields.into_boxed_slice());
        let site: &'static DynSite = Box::leak(Box::new(DynSite {
            metadata: OnceLock::new(),
            interest: AtomicU8::new(SOMETIMES),
            keys: &fields[keys_from..],
            overflow,
            event_name,
        }));
        let identifier: Identifier = tracing_core::identify_callsite!(site);
        let metadata = Metadata::new(
            name,
            target,
            level,
            None,
            None,
            None,
            FieldSet::new(fields, identifier),
            kind,
        );
        let _ = site.metadata.set(metadata);
        site
    }

    /// The callsite's metadata (set when it was made).
    pub(crate) fn meta(&'static self) -> &'static Metadata<'static> {
        self.metadata.get().expect("set when made")
    }

    /// The payload keys among this callsite's fields.
    pub(crate) fn keys(&self) -> &'static [&'static str] {
        self.keys
    }

    /// True when the current dispatcher wants spans or events of this callsite.
    pub(crate) fn is_enabled(&'static self) -> bool {
        match self.interest.load(Ordering::Relaxed) {
            NEVER => false,
            ALWAYS => true,
            _ => tracing_core::dispatcher::get_default(|dispatch| dispatch.enabled(self.meta())),
        }
    }
}

thread_local! {
    /// A per-thread direct-mapped cache of callsites by event name, so an event name seen before
    /// on this thread costs no lock: indexed by the name's address (static names keep it), checked
    /// by content. A widened callsite replaces a cached narrower one at its next use.
    static CACHE: [Cell<Option<&'static DynSite>>; CACHE_SLOTS] = const { [const { Cell::new(None) }; CACHE_SLOTS] };
}

const CACHE_SLOTS: usize = 16;

fn cache_slot(name: &str, span: bool) -> usize {
    ((name.as_ptr() as usize >> 3) ^ name.len() ^ usize::from(span)) % CACHE_SLOTS
}

fn cached(name: &str, span: bool, level: Level) -> Option<&'static DynSite> {
    let site = CACHE.with(|cache| cache[cache_slot(name, span)].get())?;
    let meta = site.meta();
    (site.event_name == name && meta.is_span() == span && *meta.level() == level).then_some(site)
}

fn remember(name: &str, span: bool, site: &'static DynSite) {
    if !site.overflow {
        CACHE.with(|cache| cache[cache_slot(name, span)].set(Some(site)));
    }
}

/// Callsites by event name.
type ByName = RwLock<FxHashMap<Box<str>, &'static DynSite>>;

/// The callsites, by event name and kind.
pub(crate) struct Registry {
    /// Per level (ERROR..TRACE), event callsites (`[0]`) and span callsites (`[1]`) by event name.
    by_name: [[ByName; 2]; 5],
    /// How many callsites were made (the overflow ones included).
    made: AtomicUsize,
    overflow_span: OnceLock<&'static DynSite>,
    overflow_event: OnceLock<&'static DynSite>,
}

static SITES: OnceLock<Registry> = OnceLock::new();

pub(crate) fn registry() -> &'static Registry {
    SITES.get_or_init(|| Registry {
        by_name: Default::default(),
        made: AtomicUsize::new(0),
        overflow_span: OnceLock::new(),
        overflow_event: OnceLock::new(),
    })
}

impl Registry {
    fn map(&self, span: bool, level: Level) -> &ByName {
        let level = match level {
            Level::ERROR => 0,
            Level::WARN => 1,
            Level::INFO => 2,
            Level::DEBUG => 3,
            _ => 4,
        };
        &self.by_name[level][usize::from(span)]
    }

    /// The callsite of `name` (a span callsite when `span`) whose fields include every key of
    /// `keys`, made (or widened) when needed; `level` is used for new callsites.
    pub(crate) fn site(&self, name: &str, span: bool, level: Level, payload: &Payload) -> &'static DynSite {
        let covers = |site: &DynSite| payload.keys().all(|k| site.keys.contains(&k));
        if let Some(site) = cached(name, span, level) {
            if covers(site) {
                return site;
            }
        }
        // (The read guard must be gone before `widen` takes the write lock.)
        let known = self.map(span, level).read().get(name).copied();
        let site = match known {
            Some(site) if covers(site) => site,
            _ => self.widen(name, span, level, payload),
        };
        remember(name, span, site);
        site
    }

    /// The callsite of `name` if one was made (for `silenced`).
    pub(crate) fn existing(&self, name: &str, span: bool, level: Level) -> Option<&'static DynSite> {
        if let Some(site) = cached(name, span, level) {
            return Some(site);
        }
        let site = self.map(span, level).read().get(name).copied()?;
        remember(name, span, site);
        Some(site)
    }

    #[cold]
    fn widen(&self, name: &str, span: bool, level: Level, payload: &Payload) -> &'static DynSite {
        let mut by_name = self.map(span, level).write();
        let old = by_name.get(name).copied();
        let mut fields = vec![BRIDGE_FIELD];
        if !span {
            fields.push(DURATION_FIELD);
        }
        let keys_from = fields.len();
        if let Some(old) = old {
            fields.extend_from_slice(old.keys);
        }
        for (key, _) in payload.entries() {
            if !fields.contains(&key.as_str()) {
                // tracing's field names are `&'static str`: an owned payload key is leaked once
                // per callsite that first sees it (callsites are bounded by MAX_SITES).
                fields.push(key.as_static().unwrap_or_else(|| Box::leak(Box::from(key.as_str()))));
            }
        }
        if let Some(old) = old {
            if old.keys.len() == fields.len() - keys_from {
                return old;
            }
        }
        if self.made.load(Ordering::Relaxed) >= MAX_SITES {
            return self.overflow(span, level);
        }
        let (method, namespace) = match name.split_once('.') {
            Some((method, namespace)) => (method, namespace),
            None => (name, "notify"),
        };
        let method: &'static str = match old {
            Some(old) => old.meta().name(),
            None => Box::leak(method.to_owned().into_boxed_str()),
        };
        let namespace: &'static str = match old {
            Some(old) => old.meta().target(),
            None => Box::leak(namespace.to_owned().into_boxed_str()),
        };
        let kind = if span { Kind::SPAN } else { Kind::EVENT };
        let event_name: &'static str = match old {
            Some(old) => old.event_name,
            None => Box::leak(name.to_owned().into_boxed_str()),
        };
        let site = DynSite::make_unregistered(event_name, method, namespace, level, kind, fields, keys_from, false);
        self.made.fetch_add(1, Ordering::Relaxed);
        tracing_core::callsite::register(site);
        by_name.insert(name.into(), site);
        site
    }

    /// The shared callsite used past [`MAX_SITES`].
    pub(crate) fn overflow(&self, span: bool, level: Level) -> &'static DynSite {
        // One overflow callsite per kind, at the level of the first bridge that overflowed.
        let cell = if span {
            &self.overflow_span
        } else {
            &self.overflow_event
        };
        cell.get_or_init(|| {
            let kind = if span { Kind::SPAN } else { Kind::EVENT };
            let fields = vec![BRIDGE_FIELD, DURATION_FIELD, NAME_FIELD, PAYLOAD_FIELD];
            let site = DynSite::make_unregistered("", "event", "notify", level, kind, fields, 4, true);
            self.made.fetch_add(1, Ordering::Relaxed);
            tracing_core::callsite::register(site);
            site
        })
    }
}
