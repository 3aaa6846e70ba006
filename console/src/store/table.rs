//! The one table of the kinds the console watches. Each layer of the
//! store builds its part from it ([`super::kind`] the kind enum,
//! [`super::object`] the object of any kind, [`super::visit`] the step
//! generic over a kind's type, [`super::ingest`] the way in,
//! [`super::stored`] what is kept and the store itself), so that the table
//! is written once and no layer needs one above it: `kinds! { then }` runs
//! the macro `then` with every row.

// Per kind: the `Object` variant => the object's type [read as what a LIST
// page or watch event is parsed into ([`wire`])] as the store keeps it
// ([`kept`]), the map's field, the kind's name, whether it is
// namespaced, its links ([`index`]) and whether it references a class
// ([`classed`]).
macro_rules! kinds {
    ($then:ident) => {
        $then! {
            Runtime => Runtime [read Runtime] as Runtime, runtimes, "Runtime", true, index::none, classed::never;
            RuntimeGrant => RuntimeGrant [read RuntimeGrant] as RuntimeGrant, grants, "RuntimeGrant", false, index::none, classed::never;
            RuntimeClass => RuntimeClass [read RuntimeClass] as RuntimeClass, classes, "RuntimeClass", false, index::none, classed::never;
            Node => Node [read Node] as Node, nodes, "Node", false, index::none, classed::never;
            Pod => Pod [read WirePod] as SlimPod, pods, "Pod", true, index::owners, classed::pod;
            Deployment => Deployment [read Deployment] as SlimDeployment, deployments, "Deployment", true, index::owners, classed::deployment;
            ReplicaSet => ReplicaSet [read ReplicaSet] as SlimReplicaSet, replicasets, "ReplicaSet", true, index::owners, classed::replica_set;
            StatefulSet => StatefulSet [read StatefulSet] as StatefulSet, statefulsets, "StatefulSet", true, index::none, classed::stateful_set;
            DaemonSet => DaemonSet [read DaemonSet] as DaemonSet, daemonsets, "DaemonSet", true, index::none, classed::daemon_set;
            Job => Job [read Job] as Job, jobs, "Job", true, index::none, classed::job;
            CronJob => CronJob [read CronJob] as CronJob, cronjobs, "CronJob", true, index::none, classed::cron_job;
            Event => Event [read Event] as Event, events, "Event", true, index::involved, classed::never;
            Lease => Lease [read Lease] as Lease, leases, "Lease", true, index::none, classed::never;
            Namespace => Namespace [read Namespace] as Namespace, namespaces, "Namespace", false, index::none, classed::never;
            PendingGrantsFile => PendingGrantsFile [read PendingGrantsFile] as PendingGrantsFile, pending_files, "PendingGrantsFile", false, index::none, classed::never;
        }
    };
}
pub(super) use kinds;
