//! Keyless CI: which CI identities an account trusts ("trusted publishers"), and whether the
//! claims of a job's verified OpenID Connect token are one of them. Signature checking is the
//! server's; everything decided from the claims is here, each refusal naming the claim, what
//! was expected and what the token said.

use std::fmt;

use serde_json::{Map, Value};
use tidemark_wire::CiIdentity;

use crate::input::FieldError;

/// GitHub Actions' issuer on github.com (GitHub Enterprise Server: `https://HOST/_services/token`).
pub const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";
/// GitLab.com's issuer (a self-managed instance: its own URL).
pub const GITLAB_ISSUER: &str = "https://gitlab.com";
/// Clock skew allowed on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: i64 = 60;
/// How long a push token from an exchange lasts, in seconds.
pub const PUSH_TOKEN_SECS: i64 = 15 * 60;
/// The algorithms a job token may be signed with (what GitHub and GitLab use).
pub const ALGORITHMS: [&str; 2] = ["RS256", "ES256"];

const MAX_TEXT: usize = 255;

/// Who runs the CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    GitLab,
    Custom,
}

impl Provider {
    pub fn parse(raw: &str) -> Result<Provider, FieldError> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "github" | "github-actions" | "github_actions" => Ok(Provider::GitHub),
            "gitlab" | "gitlab-ci" | "gitlab_ci" => Ok(Provider::GitLab),
            "custom" => Ok(Provider::Custom),
            _ => Err(FieldError::new(
                "provider",
                format!("provider must be github, gitlab or custom (got {raw:?})"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
            Provider::Custom => "custom",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Provider::GitHub => "GitHub Actions",
            Provider::GitLab => "GitLab CI",
            Provider::Custom => "Custom issuer",
        }
    }

    /// The issuer used when none is given (a custom issuer always names one).
    pub fn default_issuer(self) -> Option<&'static str> {
        match self {
            Provider::GitHub => Some(GITHUB_ISSUER),
            Provider::GitLab => Some(GITLAB_ISSUER),
            Provider::Custom => None,
        }
    }
}

/// An issuer URL as tokens carry it in `iss`: `https://` (plain `http://` only where the
/// operator allows it, for a lab or a test), no query, fragment or credentials, no trailing
/// slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer(String);

impl Issuer {
    pub fn parse(raw: &str, allow_http: bool) -> Result<Issuer, FieldError> {
        let raw = raw.trim().trim_end_matches('/');
        let bad = |why: &str| FieldError::new("issuer", format!("issuer {why} (got {raw:?})"));
        let url = url::Url::parse(raw).map_err(|_| bad("must be an absolute URL"))?;
        match url.scheme() {
            "https" => {}
            "http" if allow_http => {}
            "http" => {
                return Err(bad(
                    "must use https (TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS=1 allows http for a lab)",
                ))
            }
            _ => return Err(bad("must be an https URL")),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("must name a host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("must not have a query or a fragment"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("must not carry credentials"));
        }
        if raw.len() > MAX_TEXT {
            return Err(bad("must be at most 255 characters"));
        }
        Ok(Issuer(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the issuer's discovery document is (OpenID Connect Discovery 1.0, section 4).
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.0)
    }
}

/// A git ref pattern: `refs/heads/main`, or with `*` standing for any characters
/// (`refs/tags/v*`, `refs/heads/release/*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefPattern(String);

impl RefPattern {
    pub fn parse(raw: &str) -> Result<RefPattern, FieldError> {
        let raw = raw.trim();
        if !raw.starts_with("refs/") || raw.len() > MAX_TEXT || has_control(raw) {
            return Err(FieldError::new(
                "ref_pattern",
                format!(
                    "ref_pattern must be a full git ref such as refs/heads/main or \
                     refs/tags/v*, at most 255 characters (got {raw:?})"
                ),
            ));
        }
        Ok(RefPattern(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, git_ref: &str) -> bool {
        glob(self.0.as_bytes(), git_ref.as_bytes())
    }
}

/// `*` matches any run of bytes (including `/`); everything else matches itself.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    // Iterative with one backtrack point: linear in practice, never exponential.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Which of the account's projects a publisher may push to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectScope {
    All,
    One(String),
}

impl ProjectScope {
    /// `*` (or nothing) is every project; anything else is one project label.
    pub fn parse(raw: Option<&str>) -> Result<ProjectScope, FieldError> {
        match raw.map(str::trim) {
            None | Some("") | Some("*") => Ok(ProjectScope::All),
            Some(label) => {
                crate::input::bounded_text("project", label, crate::push::MAX_LABEL_CHARS)?;
                Ok(ProjectScope::One(label.to_owned()))
            }
        }
    }

    /// How it is stored: `None` for every project.
    pub fn stored(&self) -> Option<&str> {
        match self {
            ProjectScope::All => None,
            ProjectScope::One(label) => Some(label),
        }
    }

    pub fn allows(&self, label: &str) -> bool {
        match self {
            ProjectScope::All => true,
            ProjectScope::One(one) => one == label,
        }
    }
}

/// What an admin fills in to add a publisher, before it is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublisherDraft {
    pub provider: String,
    pub issuer: Option<String>,
    pub repository: Option<String>,
    pub owner_id: Option<String>,
    pub repository_id: Option<String>,
    pub workflow: Option<String>,
    pub environment: Option<String>,
    pub ref_pattern: Option<String>,
    pub subject: Option<String>,
    pub project: Option<String>,
}

/// A trusted publisher's rules: a CI identity, and the projects it may push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherSpec {
    pub provider: Provider,
    pub issuer: Issuer,
    /// GitHub `owner/name`, GitLab project path; for a custom issuer, the exact `sub`.
    pub repository: String,
    /// The immutable numeric ids (GitHub `repository_owner_id`/`repository_id`, GitLab
    /// `namespace_id`/`project_id`). `None` until given or pinned by the first matching token.
    pub owner_id: Option<String>,
    pub repository_id: Option<String>,
    /// GitHub: the workflow file name under `.github/workflows/`; GitLab: the CI
    /// configuration path (`.gitlab-ci.yml`). `None` for a custom issuer.
    pub workflow: Option<String>,
    pub environment: Option<String>,
    pub ref_pattern: Option<RefPattern>,
    pub projects: ProjectScope,
}

impl PublisherSpec {
    pub fn parse(draft: &PublisherDraft, allow_http: bool) -> Result<PublisherSpec, FieldError> {
        let provider = Provider::parse(&draft.provider)?;
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let issuer = match (given(&draft.issuer), provider.default_issuer()) {
            (Some(raw), _) => Issuer::parse(&raw, allow_http)?,
            (None, Some(default)) => Issuer(default.to_owned()),
            (None, None) => {
                return Err(FieldError::new(
                    "issuer",
                    "a custom provider needs its issuer URL".into(),
                ))
            }
        };
        let text = |field: &str, v: Option<String>| -> Result<Option<String>, FieldError> {
            match v {
                Some(s) if s.len() > MAX_TEXT || has_control(&s) => Err(FieldError::new(
                    field,
                    format!("{field} must be at most 255 characters with no control characters"),
                )),
                other => Ok(other),
            }
        };
        let id = |field: &str, v: Option<String>| -> Result<Option<String>, FieldError> {
            match v {
                Some(s) if s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) => {
                    Err(FieldError::new(
                        field,
                        format!("{field} must be the numeric id (digits only, got {s:?})"),
                    ))
                }
                other => Ok(other),
            }
        };
        let (repository, workflow) = match provider {
            Provider::Custom => {
                let subject = text("subject", given(&draft.subject))?.ok_or_else(|| {
                    FieldError::new(
                        "subject",
                        "a custom issuer's publisher names the exact subject (sub) it trusts"
                            .into(),
                    )
                })?;
                (subject, None)
            }
            Provider::GitHub | Provider::GitLab => {
                let repository = text("repository", given(&draft.repository))?
                    .filter(|r| {
                        let parts: Vec<&str> = r.split('/').collect();
                        parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && !p.contains(' '))
                    })
                    .ok_or_else(|| {
                        FieldError::new(
                            "repository",
                            "repository must be owner/name (GitHub) or the project path, \
                             group/project (GitLab)"
                                .into(),
                        )
                    })?;
                let workflow = text("workflow", given(&draft.workflow))?;
                let workflow = match (provider, workflow) {
                    (Provider::GitHub, Some(w)) => {
                        let file = w.trim_start_matches(".github/workflows/").to_owned();
                        if file.contains('/')
                            || !(file.ends_with(".yml") || file.ends_with(".yaml"))
                        {
                            return Err(FieldError::new(
                                "workflow",
                                format!(
                                    "workflow must be a file name under .github/workflows, \
                                     such as ci.yml (got {w:?})"
                                ),
                            ));
                        }
                        file
                    }
                    (Provider::GitLab, w) => w.unwrap_or_else(|| ".gitlab-ci.yml".into()),
                    _ => {
                        return Err(FieldError::new(
                            "workflow",
                            "workflow must name the workflow file that pushes, such as ci.yml"
                                .into(),
                        ))
                    }
                };
                (repository, Some(workflow))
            }
        };
        Ok(PublisherSpec {
            provider,
            issuer,
            repository,
            owner_id: id("owner_id", given(&draft.owner_id))?,
            repository_id: id("repository_id", given(&draft.repository_id))?,
            workflow,
            environment: text("environment", given(&draft.environment))?,
            ref_pattern: given(&draft.ref_pattern)
                .map(|p| RefPattern::parse(&p))
                .transpose()?,
            projects: ProjectScope::parse(draft.project.as_deref())?,
        })
    }

    /// One line for lists and the audit log.
    pub fn describe(&self) -> String {
        let mut out = format!("{} {}", self.provider.title(), self.repository);
        if let Some(w) = &self.workflow {
            out.push_str(&format!(" workflow {w}"));
        }
        if let Some(e) = &self.environment {
            out.push_str(&format!(" environment {e}"));
        }
        if let Some(p) = &self.ref_pattern {
            out.push_str(&format!(" ref {}", p.as_str()));
        }
        match &self.projects {
            ProjectScope::All => out.push_str(" → every project"),
            ProjectScope::One(label) => out.push_str(&format!(" → project {label}")),
        }
        out
    }
}

/// Why a token was refused: the claim, what was expected, and what the token said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub claim: &'static str,
    pub expected: String,
    pub found: String,
}

impl Refusal {
    fn new(claim: &'static str, expected: impl Into<String>, found: impl Into<String>) -> Self {
        Refusal {
            claim,
            expected: expected.into(),
            found: found.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "claim `{}`: expected {}, the token says {}",
            self.claim, self.expected, self.found
        )
    }
}

/// A verified token's payload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claims(Map<String, Value>);

impl Claims {
    pub fn new(map: Map<String, Value>) -> Self {
        Claims(map)
    }

    /// A claim as text: strings as they are, numbers written out (GitHub sends ids as strings,
    /// other issuers as numbers).
    pub fn text(&self, name: &str) -> Option<String> {
        match self.0.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    fn seconds(&self, name: &'static str) -> Result<Option<i64>, Refusal> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|x| x.is_finite()).map(|x| x as i64))
                .map(Some)
                .ok_or_else(|| Refusal::new(name, "seconds since 1970", n.to_string())),
            Some(other) => Err(Refusal::new(name, "seconds since 1970", shown(other))),
        }
    }

    fn shown(&self, name: &str) -> String {
        self.0.get(name).map_or_else(|| "nothing".into(), shown)
    }
}

/// A claim's value as an error shows it (bounded: a token may carry anything).
fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

fn quoted(s: &str) -> String {
    shown(&Value::String(s.to_owned()))
}

/// The checks every token passes whoever issued it: `iss` exactly, exactly one `aud` equal
/// to Tidemark's audience, `exp`/`nbf`/`iat` within [`LEEWAY_SECS`], and a `jti` to make it
/// single-use. Returns the `jti` and `exp`.
pub fn check_registered(
    claims: &Claims,
    issuer: &str,
    audience: &str,
    now_secs: i64,
) -> Result<(String, i64), Refusal> {
    if claims.text("iss").as_deref() != Some(issuer) {
        return Err(Refusal::new("iss", quoted(issuer), claims.shown("iss")));
    }
    let wanted = format!("exactly one audience, {}", quoted(audience));
    match claims.0.get("aud") {
        Some(Value::String(aud)) if aud == audience => {}
        Some(Value::Array(auds)) if auds.len() == 1 && auds[0].as_str() == Some(audience) => {}
        Some(Value::Array(auds)) if auds.len() > 1 => {
            return Err(Refusal::new(
                "aud",
                wanted,
                format!("{} audiences: {}", auds.len(), claims.shown("aud")),
            ))
        }
        _ => return Err(Refusal::new("aud", wanted, claims.shown("aud"))),
    }
    let exp = claims
        .seconds("exp")?
        .ok_or_else(|| Refusal::new("exp", "an expiry time", "nothing"))?;
    if now_secs > exp + LEEWAY_SECS {
        return Err(Refusal::new(
            "exp",
            format!("a time after now ({now_secs})"),
            format!("{exp}: the token expired {} s ago", now_secs - exp),
        ));
    }
    if let Some(nbf) = claims.seconds("nbf")? {
        if nbf > now_secs + LEEWAY_SECS {
            return Err(Refusal::new(
                "nbf",
                format!("a time before now ({now_secs})"),
                format!(
                    "{nbf}: the token is not valid for another {} s",
                    nbf - now_secs
                ),
            ));
        }
    }
    let iat = claims
        .seconds("iat")?
        .ok_or_else(|| Refusal::new("iat", "the time the token was issued", "nothing"))?;
    if iat > now_secs + LEEWAY_SECS {
        return Err(Refusal::new(
            "iat",
            format!("a time before now ({now_secs})"),
            format!("{iat}: issued {} s in the future", iat - now_secs),
        ));
    }
    let jti = claims
        .text("jti")
        .filter(|j| !j.is_empty() && j.len() <= MAX_TEXT)
        .ok_or_else(|| {
            Refusal::new(
                "jti",
                "a token id (at most 255 characters)",
                claims.shown("jti"),
            )
        })?;
    Ok((jti, exp))
}

/// The refusal for a `jti` seen before.
pub fn replayed(jti: &str) -> Refusal {
    Refusal::new(
        "jti",
        "a token not used before (each job token is exchanged once)",
        format!("{}, which was already exchanged", quoted(jti)),
    )
}

/// A publisher matched: the identity to record, and the numeric ids to pin when the publisher
/// did not have them yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub identity: CiIdentity,
    pub pin: Option<(String, String)>,
}

/// Whether a verified token's claims are the publisher's CI identity. Checks run from the
/// most fundamental (whose repository) to the narrowest (which ref), and the first that
/// fails is the refusal.
pub fn match_publisher(spec: &PublisherSpec, claims: &Claims) -> Result<Matched, Refusal> {
    match spec.provider {
        Provider::GitHub => match_forge(spec, claims, &GITHUB_CLAIMS),
        Provider::GitLab => match_forge(spec, claims, &GITLAB_CLAIMS),
        Provider::Custom => {
            if claims.text("sub").as_deref() != Some(spec.repository.as_str()) {
                return Err(Refusal::new(
                    "sub",
                    quoted(&spec.repository),
                    claims.shown("sub"),
                ));
            }
            check_environment_and_ref(spec, claims, "environment", "ref")?;
            Ok(Matched {
                identity: CiIdentity {
                    provider: spec.provider.as_str().into(),
                    issuer: spec.issuer.as_str().into(),
                    repository: spec.repository.clone(),
                    repository_id: None,
                    workflow: None,
                    git_ref: claims.text("ref"),
                    sha: claims.text("sha"),
                    environment: claims.text("environment"),
                    run_id: claims.text("run_id"),
                    run_url: None,
                },
                pin: None,
            })
        }
    }
}

/// Where a forge puts what a publisher matches on.
struct ForgeClaims {
    owner_id: &'static str,
    repository_id: &'static str,
    repository: &'static str,
    workflow: &'static str,
    /// The full ref (`refs/heads/main`) the ref pattern is matched against.
    full_ref: &'static str,
    run_id: &'static str,
}

const GITHUB_CLAIMS: ForgeClaims = ForgeClaims {
    owner_id: "repository_owner_id",
    repository_id: "repository_id",
    repository: "repository",
    workflow: "workflow_ref",
    full_ref: "ref",
    run_id: "run_id",
};

const GITLAB_CLAIMS: ForgeClaims = ForgeClaims {
    owner_id: "namespace_id",
    repository_id: "project_id",
    repository: "project_path",
    workflow: "ci_config_ref_uri",
    full_ref: "ref_path",
    run_id: "job_id",
};

fn match_forge(
    spec: &PublisherSpec,
    claims: &Claims,
    names: &ForgeClaims,
) -> Result<Matched, Refusal> {
    let name = claims.text(names.repository);
    // Names are case-insensitive on both forges; ids are what make a re-created repository
    // of the same name another repository.
    if !name
        .as_deref()
        .is_some_and(|n| n.eq_ignore_ascii_case(&spec.repository))
    {
        return Err(Refusal::new(
            names.repository,
            quoted(&spec.repository),
            claims.shown(names.repository),
        ));
    }
    let owner_id = claims.text(names.owner_id);
    let repository_id = claims.text(names.repository_id);
    for (claim, want, got) in [
        (names.owner_id, &spec.owner_id, &owner_id),
        (names.repository_id, &spec.repository_id, &repository_id),
    ] {
        match (want, got) {
            (Some(want), Some(got)) if want == got => {}
            (Some(want), _) => {
                return Err(Refusal::new(
                    claim,
                    format!(
                        "{} (the id this publisher was pinned to; a repository deleted and \
                         created again under the same name has a new id)",
                        quoted(want)
                    ),
                    claims.shown(claim),
                ))
            }
            (None, None) => return Err(Refusal::new(claim, "a numeric id", "nothing")),
            (None, Some(_)) => {}
        }
    }
    let workflow_ref = claims.text(names.workflow).unwrap_or_default();
    let workflow = workflow_path(spec.provider, &workflow_ref);
    let expected = spec.workflow.as_deref().unwrap_or_default();
    let workflow_ok = match spec.provider {
        Provider::GitHub => workflow
            .as_deref()
            .and_then(|p| p.strip_prefix(".github/workflows/"))
            .is_some_and(|file| file == expected),
        _ => workflow.as_deref() == Some(expected),
    };
    if !workflow_ok {
        let expected = match spec.provider {
            Provider::GitHub => format!(
                "the workflow .github/workflows/{expected} of {}",
                spec.repository
            ),
            _ => format!("the CI configuration {expected} of {}", spec.repository),
        };
        return Err(Refusal::new(
            names.workflow,
            expected,
            claims.shown(names.workflow),
        ));
    }
    check_environment_and_ref(spec, claims, "environment", names.full_ref)?;
    let pin = match (
        &spec.owner_id,
        &spec.repository_id,
        owner_id,
        repository_id.clone(),
    ) {
        (None, _, Some(o), Some(r)) | (_, None, Some(o), Some(r)) => Some((o, r)),
        _ => None,
    };
    let run_id = claims.text(names.run_id);
    Ok(Matched {
        identity: CiIdentity {
            provider: spec.provider.as_str().into(),
            issuer: spec.issuer.as_str().into(),
            repository: name.unwrap_or_default(),
            repository_id,
            workflow,
            git_ref: claims.text(names.full_ref),
            sha: claims.text("sha"),
            environment: claims.text("environment").filter(|e| !e.is_empty()),
            run_url: run_id.as_deref().and_then(|id| run_url(spec, claims, id)),
            run_id,
        },
        pin,
    })
}

fn check_environment_and_ref(
    spec: &PublisherSpec,
    claims: &Claims,
    environment: &'static str,
    full_ref: &'static str,
) -> Result<(), Refusal> {
    if let Some(want) = &spec.environment {
        let got = claims.text(environment);
        if !got.as_deref().is_some_and(|g| g.eq_ignore_ascii_case(want)) {
            return Err(Refusal::new(
                environment,
                quoted(want),
                claims.shown(environment),
            ));
        }
    }
    if let Some(pattern) = &spec.ref_pattern {
        let got = claims.text(full_ref);
        if !got.as_deref().is_some_and(|r| pattern.matches(r)) {
            return Err(Refusal::new(
                full_ref,
                format!("a ref matching {}", quoted(pattern.as_str())),
                claims.shown(full_ref),
            ));
        }
    }
    Ok(())
}

/// The workflow file from `workflow_ref` (`owner/repo/.github/workflows/ci.yml@refs/heads/main`)
/// or `ci_config_ref_uri` (`gitlab.com/group/project//.gitlab-ci.yml@refs/heads/main`).
pub fn workflow_path(provider: Provider, reference: &str) -> Option<String> {
    let (path, _at) = reference.rsplit_once('@')?;
    let file = match provider {
        Provider::GitHub => {
            let start = path.find("/.github/workflows/")?;
            &path[start + 1..]
        }
        Provider::GitLab => path.split_once("//")?.1,
        Provider::Custom => return None,
    };
    (!file.is_empty()).then(|| file.to_owned())
}

/// A link to the run: GitHub's web host is github.com for the public issuer, else the
/// Enterprise Server's host; GitLab's is the issuer itself.
fn run_url(spec: &PublisherSpec, claims: &Claims, run_id: &str) -> Option<String> {
    let repo = claims.text(match spec.provider {
        Provider::GitHub => "repository",
        _ => "project_path",
    })?;
    let safe = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
    };
    if !safe(&repo) || !run_id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match spec.provider {
        Provider::GitHub => {
            let web = if spec.issuer.as_str() == GITHUB_ISSUER {
                "https://github.com".to_owned()
            } else {
                spec.issuer
                    .as_str()
                    .trim_end_matches("/_services/token")
                    .to_owned()
            };
            Some(format!("{web}/{repo}/actions/runs/{run_id}"))
        }
        Provider::GitLab => Some(format!("{}/{repo}/-/jobs/{run_id}", spec.issuer.as_str())),
        Provider::Custom => None,
    }
}

mod trusted_git;
pub use trusted_git::*;

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

#[cfg(test)]
mod tests;
