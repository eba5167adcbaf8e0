//! Outgoing mail: the SMTP server (or `.eml` files) and the sender.

use super::{ConfigError, Vars};

/// An SMTP URL may carry a password: keep it out of logs.
#[derive(Clone)]
pub struct SmtpUrl(String);

impl SmtpUrl {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

tidemark_domain::redacted_debug!(SmtpUrl);

#[derive(Debug, Clone)]
pub struct MailConfig {
    /// SMTP server for outgoing mail; without it mail is written as `.eml` files.
    pub smtp_url: Option<SmtpUrl>,
    pub from: String,
}

impl MailConfig {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let smtp_url = match vars.get("TIDEMARK_SMTP_URL") {
            Some(url) if url.starts_with("smtp://") || url.starts_with("smtps://") => {
                Some(SmtpUrl(url))
            }
            Some(_) => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_SMTP_URL",
                    "expected smtp://host:port or smtps://host:port",
                ))
            }
            None => None,
        };
        let from = vars
            .get("TIDEMARK_MAIL_FROM")
            .unwrap_or_else(|| "Tidemark <no-reply@tidemark.localhost>".into());
        if from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(ConfigError::invalid(
                "TIDEMARK_MAIL_FROM",
                "expected a mailbox such as Tidemark <no-reply@example.com>",
            ));
        }
        Ok(Self { smtp_url, from })
    }

    pub fn summary(&self) -> String {
        let how = if self.smtp_url.is_some() {
            "over SMTP"
        } else {
            "written as .eml files"
        };
        format!("mail from {} {how}", self.from)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn without_smtp_mail_is_written_as_files_and_the_password_stays_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let c = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert!(c.mail.smtp_url.is_none());
        assert!(c.mail.summary().ends_with("written as .eml files"));
        let smtp = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_SMTP_URL", "smtp://u:hunter2@mail:25"),
        ])
        .unwrap();
        assert!(smtp.mail.summary().ends_with("over SMTP"));
        assert!(!format!("{smtp:?}").contains("hunter2"));
    }
}
