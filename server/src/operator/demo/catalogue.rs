//! The checks the demo's scanner runs: real CIS AWS 2.0, CIS GCP 2.0 and SOC 2 controls, each
//! on the kind of resource it checks, with the words a scanner would use.

/// One check: its rule id, the resources it looks at (`type.name`), and what a failure says.
pub struct Check {
    pub rule: &'static str,
    pub resources: &'static [&'static str],
    pub severity: &'static str,
    pub message: &'static str,
    pub remediation: &'static str,
    /// Checked by a person, not the scanner: always `SKIP`, as real scanners report them.
    pub manual: bool,
}

const fn check(
    rule: &'static str,
    resources: &'static [&'static str],
    severity: &'static str,
    message: &'static str,
    remediation: &'static str,
) -> Check {
    Check {
        rule,
        resources,
        severity,
        message,
        remediation,
        manual: false,
    }
}

const fn manual(
    rule: &'static str,
    resources: &'static [&'static str],
    severity: &'static str,
    message: &'static str,
) -> Check {
    Check {
        rule,
        resources,
        severity,
        message,
        remediation: "Review by hand and record the evidence",
        manual: true,
    }
}

pub const CIS_AWS: &[Check] = &[
    check(
        "cis-aws-2.0-1.4",
        &["aws_iam_root_access_key.root"],
        "critical",
        "The root user has an active access key",
        "Delete the root user's access keys and use IAM roles",
    ),
    check(
        "cis-aws-2.0-1.8",
        &["aws_iam_account_password_policy.default"],
        "low",
        "Password policy allows passwords shorter than 14 characters",
        "Set minimum_password_length to 14 or more",
    ),
    check(
        "cis-aws-2.0-1.10",
        &[
            "aws_iam_user.ana",
            "aws_iam_user.ops",
            "aws_iam_user.release",
        ],
        "high",
        "Console user has no MFA device",
        "Enable a virtual or hardware MFA device for the user",
    ),
    manual(
        "cis-aws-2.0-1.12",
        &["aws_iam_user.ana", "aws_iam_user.ops"],
        "medium",
        "Credentials unused for 45 days or more are disabled",
    ),
    check(
        "cis-aws-2.0-1.14",
        &["aws_iam_access_key.ci_deploy", "aws_iam_access_key.ops"],
        "medium",
        "Access key is older than 90 days",
        "Rotate the key and remove the old one",
    ),
    check(
        "cis-aws-2.0-2.1.1",
        &[
            "aws_s3_bucket_policy.data",
            "aws_s3_bucket_policy.logs",
            "aws_s3_bucket_policy.assets",
        ],
        "medium",
        "S3 bucket accepts requests over plain HTTP",
        "Deny requests where aws:SecureTransport is false",
    ),
    manual(
        "cis-aws-2.0-2.1.2",
        &["aws_s3_bucket.data"],
        "low",
        "MFA Delete is enabled on the bucket",
    ),
    check(
        "cis-aws-2.0-2.1.4",
        &[
            "aws_s3_bucket.data",
            "aws_s3_bucket.logs",
            "aws_s3_bucket.assets",
        ],
        "high",
        "S3 bucket allows public read access through its ACL or policy",
        "Turn on S3 Block Public Access for the bucket and remove public grants",
    ),
    check(
        "cis-aws-2.0-2.2.1",
        &[
            "aws_ebs_volume.app",
            "aws_ebs_volume.db",
            "aws_ebs_volume.bastion",
        ],
        "medium",
        "EBS volume is not encrypted at rest",
        "Enable EBS encryption by default and re-create the volume from an encrypted snapshot",
    ),
    check(
        "cis-aws-2.0-2.3.1",
        &["aws_db_instance.main"],
        "high",
        "RDS instance storage is not encrypted",
        "Restore the instance from an encrypted snapshot",
    ),
    check(
        "cis-aws-2.0-3.1",
        &["aws_cloudtrail.main"],
        "medium",
        "CloudTrail trail does not log all regions",
        "Set is_multi_region_trail on the trail",
    ),
    check(
        "cis-aws-2.0-3.2",
        &["aws_cloudtrail.main"],
        "medium",
        "CloudTrail log file validation is off",
        "Set enable_log_file_validation on the trail",
    ),
    check(
        "cis-aws-2.0-3.7",
        &["aws_kms_key.app", "aws_kms_key.logs"],
        "low",
        "KMS key rotation is disabled",
        "Enable automatic yearly rotation for the key",
    ),
    check(
        "cis-aws-2.0-4.1",
        &["aws_cloudwatch_log_metric_filter.unauthorized_api"],
        "medium",
        "No alarm on unauthorized API calls",
        "Add a metric filter and alarm for UnauthorizedOperation and AccessDenied",
    ),
    check(
        "cis-aws-2.0-4.3",
        &["aws_cloudwatch_log_metric_filter.root_usage"],
        "medium",
        "No alarm on use of the root user",
        "Add a metric filter and alarm for root user activity",
    ),
    check(
        "cis-aws-2.0-5.2",
        &[
            "aws_security_group.bastion",
            "aws_security_group.app",
            "aws_security_group.db",
        ],
        "critical",
        "Security group allows SSH (port 22) from 0.0.0.0/0",
        "Restrict the ingress rule to known address ranges or use Session Manager",
    ),
    check(
        "cis-aws-2.0-5.3",
        &[
            "aws_security_group.bastion",
            "aws_security_group.app",
            "aws_security_group.db",
        ],
        "high",
        "Security group allows RDP (port 3389) from 0.0.0.0/0",
        "Remove the rule or restrict it to known address ranges",
    ),
    check(
        "cis-aws-2.0-5.6",
        &[
            "aws_instance.app_1",
            "aws_instance.app_2",
            "aws_instance.bastion",
        ],
        "medium",
        "EC2 instance accepts IMDSv1 requests",
        "Require IMDSv2 (http_tokens = required)",
    ),
];

pub const SOC2_AWS: &[Check] = &[
    check(
        "soc2-cc6.1",
        &["aws_s3_bucket.data", "aws_s3_bucket.logs"],
        "medium",
        "Bucket has no default encryption with a customer-managed key",
        "Set server-side encryption with an aws:kms key",
    ),
    check(
        "soc2-cc6.6",
        &["aws_security_group.app"],
        "high",
        "Application tier accepts traffic from outside the load balancer",
        "Allow ingress only from the load balancer's security group",
    ),
    manual(
        "soc2-cc6.3",
        &[
            "aws_iam_user.ana",
            "aws_iam_user.ops",
            "aws_iam_user.release",
        ],
        "low",
        "Access is reviewed quarterly",
    ),
    check(
        "soc2-cc7.2",
        &["aws_cloudtrail.main"],
        "medium",
        "Trail is not delivered to CloudWatch Logs for monitoring",
        "Set cloud_watch_logs_group_arn on the trail",
    ),
    check(
        "soc2-cc8.1",
        &["aws_s3_bucket_versioning.data"],
        "low",
        "Bucket versioning is suspended",
        "Enable versioning on the bucket",
    ),
    check(
        "soc2-a1.2",
        &["aws_db_instance.main"],
        "medium",
        "Automated backups are kept for fewer than 7 days",
        "Set backup_retention_period to 7 or more",
    ),
];

pub const CIS_GCP: &[Check] = &[
    check(
        "cis-gcp-2.0-1.4",
        &[
            "google_service_account_key.etl",
            "google_service_account_key.deploy",
        ],
        "medium",
        "Service account has a user-managed key",
        "Use workload identity instead of exported keys",
    ),
    check(
        "cis-gcp-2.0-2.1",
        &["google_project_iam_audit_config.acme_data_prod"],
        "medium",
        "Data access audit logs are not enabled for all services",
        "Enable DATA_READ and DATA_WRITE audit logs for allServices",
    ),
    check(
        "cis-gcp-2.0-3.6",
        &[
            "google_compute_firewall.default_allow_ssh",
            "google_compute_firewall.bastion",
        ],
        "high",
        "Firewall rule allows SSH from 0.0.0.0/0",
        "Restrict source_ranges or use Identity-Aware Proxy for SSH",
    ),
    check(
        "cis-gcp-2.0-4.1",
        &[
            "google_compute_instance.etl_1",
            "google_compute_instance.etl_2",
            "google_compute_instance.web",
        ],
        "high",
        "Instance uses the default service account",
        "Attach a dedicated service account with least privilege",
    ),
    check(
        "cis-gcp-2.0-4.9",
        &[
            "google_compute_instance.etl_1",
            "google_compute_instance.etl_2",
            "google_compute_instance.web",
        ],
        "medium",
        "Instance has a public IP address",
        "Remove the access_config block and use Cloud NAT",
    ),
    check(
        "cis-gcp-2.0-5.1",
        &[
            "google_storage_bucket.raw_data",
            "google_storage_bucket.exports",
            "google_storage_bucket.logs",
        ],
        "critical",
        "Bucket is readable by allUsers",
        "Remove allUsers and allAuthenticatedUsers from the bucket's IAM policy",
    ),
    check(
        "cis-gcp-2.0-6.2.1",
        &["google_sql_database_instance.warehouse"],
        "low",
        "Cloud SQL flag log_checkpoints is off",
        "Set the database flag log_checkpoints to on",
    ),
    check(
        "cis-gcp-2.0-6.6",
        &["google_sql_database_instance.warehouse"],
        "high",
        "Cloud SQL instance has a public IP address",
        "Use private IP only (ipv4_enabled = false)",
    ),
    manual(
        "cis-gcp-2.0-1.15",
        &["google_project.acme_data_prod"],
        "low",
        "API keys are restricted to the APIs they need",
    ),
];

pub const SOC2_GCP: &[Check] = &[
    check(
        "soc2-cc6.6",
        &[
            "google_compute_firewall.default_allow_ssh",
            "google_compute_firewall.bastion",
        ],
        "high",
        "Firewall rule admits traffic from outside the corporate ranges",
        "Restrict source_ranges to the VPN and load balancer ranges",
    ),
    check(
        "soc2-cc8.1",
        &[
            "google_storage_bucket.raw_data",
            "google_storage_bucket.exports",
        ],
        "low",
        "Bucket versioning is off",
        "Enable versioning on the bucket",
    ),
    check(
        "soc2-cc6.1",
        &[
            "google_storage_bucket.raw_data",
            "google_storage_bucket.exports",
        ],
        "medium",
        "Bucket is not encrypted with a customer-managed key",
        "Set encryption.default_kms_key_name",
    ),
    manual(
        "soc2-cc6.3",
        &["google_project.acme_data_prod"],
        "low",
        "Access is reviewed quarterly",
    ),
    check(
        "soc2-cc7.2",
        &["google_logging_project_sink.audit"],
        "medium",
        "Audit logs are not exported to a monitored sink",
        "Create a log sink for audit logs",
    ),
    check(
        "soc2-a1.2",
        &["google_sql_database_instance.warehouse"],
        "medium",
        "Automated backups are off",
        "Enable backup_configuration with point-in-time recovery",
    ),
];
