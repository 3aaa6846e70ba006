//! The kinds the console watches: [`Kind`], built from the table
//! ([`super::table`]), and the lists of kinds the analysis reads. Its own
//! file so that every layer of the store can name a kind without the
//! layers above it.

macro_rules! kind_enum {
    ($( $variant:ident => $ty:ty [read $wire:ty] as $kept:ty, $field:ident, $label:literal, $namespaced:literal, $links:path, $classed:path; )*) => {
        /// Every kind the console watches.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind { $( $variant, )* }

        impl Kind {
            /// Every kind, in a stable order.
            pub const ALL: &'static [Kind] = &[ $( Kind::$variant, )* ];

            /// The Kubernetes kind name.
            pub fn label(self) -> &'static str {
                match self { $( Kind::$variant => $label, )* }
            }

            /// Whether objects of this kind live in a namespace.
            pub fn namespaced(self) -> bool {
                match self { $( Kind::$variant => $namespaced, )* }
            }
        }
    };
}

super::table::kinds! { kind_enum }

/// The kinds the workload analysis (Handlers, Retained, the plan) reads:
/// one list for the views' inputs, the screens' watches and the plan's
/// loads.
pub const ANALYSIS_KINDS: &[Kind] = &[
    Kind::RuntimeClass,
    Kind::Node,
    Kind::RuntimeGrant,
    Kind::Pod,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::DaemonSet,
    Kind::Job,
    Kind::CronJob,
];

/// The workloads among [`ANALYSIS_KINDS`] (its tail).
pub const WORKLOAD_KINDS: &[Kind] = ANALYSIS_KINDS.split_at(3).1;
