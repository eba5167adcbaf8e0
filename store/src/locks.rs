//! PostgreSQL's write locks for an account's data, on every replica.
//!
//! One account's writes used to take the account's row lock, so its pushes were written one
//! at a time whatever the cores or replicas (docs/benchmarks.md). Now a push holds the
//! account's advisory lock *shared* and its project's *exclusive*: pushes to different
//! projects run side by side, pushes to one project one at a time (its scans are numbered per
//! project). Housekeeping's steps, which touch one project's history, take the same two
//! ([`PROJECT_BY_ID`]). Every other write to an account's data takes the account's lock exclusive
//! ([`crate::BeginWrite::begin_account_write`]), so it still excludes every push. What spans
//! projects is ordered by locks of its own, held briefly: the write budget by the admission
//! lock, for a push's place in `push_admissions` (taken before its transaction), and the
//! project cap by the project-cap lock, for the count and the commit of a push that creates a
//! project ([`tidemark_domain::append::admit`]).
//!
//! Transaction-scoped advisory locks end with the transaction, committed or not, and are
//! released only after the commit is visible, so whoever takes one next reads what the holder
//! wrote. Keys are 64-bit hashes of a name: a collision can only make two writers wait for
//! each other, never let two in at once.
//!
//! Each is its own statement: under READ COMMITTED a statement reads the snapshot taken when
//! it began, so what is read under a lock must be read by a later statement.

/// The account's lock, exclusive: no push and no other account-locked write runs meanwhile.
pub(crate) const ACCOUNT_EXCLUSIVE: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('account:' || $1, 0))";

/// A push's locks: the account's shared, then its project's (by label, which names at most one
/// project of an account, before the project exists too). `$1` account, `$2` label.
pub(crate) const PUSH: &str =
    "SELECT pg_advisory_xact_lock_shared(hashtextextended('account:' || $1, 0)), \
     pg_advisory_xact_lock(hashtextextended('project:' || $1 || '/' || $2, 0))";

/// A push's locks named by the project's id instead of its label (a project's label never
/// changes), for writes to one project's stored history beside the account's other pushes
/// (housekeeping's steps). No such project: no project lock, and nothing of it to write.
/// `$1` account, `$2` project id.
pub(crate) const PROJECT_BY_ID: &str =
    "SELECT pg_advisory_xact_lock_shared(hashtextextended('account:' || $1, 0)), \
     pg_advisory_xact_lock(hashtextextended('project:' || $1 || '/' || \
       (SELECT label FROM projects WHERE id = $2 AND account_id = $1), 0))";

/// The account's lock shared, as a push holds it, for a fold of the account's roll-up changes
/// (`rollup_folds`), whose commit need not wait for the disk.
pub(crate) const ACCOUNT_SHARED_ASYNC: &str =
    "SELECT pg_advisory_xact_lock_shared(hashtextextended('account:' || $1, 0)), \
     set_config('synchronous_commit', 'off', true)";

/// The account's admission lock: one push at a time takes its place under the write budget,
/// in a short transaction of its own (`push_admissions`), sent with the statement that counts
/// as one message (`$1` is replaced by a quoted literal there). Its commit need not wait for the
/// disk: a push's own durable commit comes after it in the log, and a place lost with an
/// unflushed log belonged to a push that was lost with it.
pub(crate) const ADMISSION: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('admission:' || $1, 0)), \
     set_config('synchronous_commit', 'off', true)";

/// The account's project-cap lock: one push that creates a project at a time confirms the
/// cap, as the last step before its commit (rare: only first pushes of a label).
pub(crate) const PROJECT_CAP: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('project-cap:' || $1, 0))";
