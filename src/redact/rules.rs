//! The redaction rules, as data: an id, what it finds, the keywords that wake it, the
//! expression, and the check on what the expression matched.
//!
//! The families and most ids follow gitleaks' default rules (github.com/gitleaks/gitleaks,
//! MIT License); the expressions are written here from the providers' published token
//! formats. The secret is the group named `s` (or `s2`…`s4`, for alternatives) when the
//! expression has one, else the whole match. The table is ordered from the most specific
//! to the most generic: when two rules find the same text, the first names it.

/// One rule.
#[derive(Debug)]
pub struct Rule {
    /// The name in the mark: `[REDACTED:{id}]`.
    pub id: &'static str,
    /// What it finds, for `check`'s findings: "a GitHub personal access token".
    pub title: &'static str,
    /// The rule runs only when one of these is in the text (ASCII case ignored); none means
    /// it always runs.
    pub keywords: &'static [&'static str],
    /// Where in the text a match can lie, seen from a keyword.
    pub scope: Scope,
    pub pattern: &'static str,
    /// A cheap test of the window that must hold before the expression runs over it (an
    /// `@` for a password in a URL, a flag for a command line): what keeps ordinary text
    /// from compiling expressions it cannot match.
    pub gate: Option<fn(&Window<'_>) -> bool>,
    /// Whether the match is a secret (and not a placeholder, a reference, a sample).
    pub check: fn(&Caps<'_>, &str) -> bool,
}

/// Where a rule's match lies, seen from its keyword: the part of the text its expression
/// runs over. Ordinary prose wakes rules with its words (`key`, `token`), and a window keeps
/// what each costs to the few lines around them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Within the run of token characters that holds the keyword (a provider's token, at
    /// least [`RUN_MIN`](super::RUN_MIN) characters long), and the character on either side.
    Token,
    /// Within any such run of the text, once a keyword is anywhere in it (Twilio's auth
    /// token next to the word `twilio`); without keywords, in every run.
    Runs,
    /// Within the keyword's line, `.0` lines before it and `.1` lines after it.
    Lines(u8, u8),
    /// Within the line of a name that holds a keyword and is given a value by one of the
    /// bytes `.2`: `=`, `:`, `>` (an XML element), `,` (a quoted pair) or `-` (a
    /// command-line flag); `.0` lines before it and `.1` after. Such words (`key`, `token`,
    /// `pass`) fill ordinary prose, so only names are searched for them, never the whole
    /// text; and a name given its value by another byte does not wake the rule (`token:`
    /// in a page's YAML example wakes the YAML rule, not the one for `token=`).
    Named(u8, u8, &'static [u8]),
    /// Within the line of a URL's user info (`scheme://user:`), whatever the keywords say.
    UserInfo,
    /// Anywhere in the text (a key block, which runs over many lines).
    Text,
}

/// What a gate sees: a window of the text as written and in ASCII lowercase, and for a
/// rule a name woke ([`Scope::Named`]), where the name is and the byte that gives its value
/// (from the window's start).
pub(crate) struct Window<'w> {
    pub text: &'w [u8],
    pub lower: &'w [u8],
    pub named: Option<(usize, usize, usize)>,
}

/// The groups of a match, as text. An expression runs over the text's bytes (ASCII classes
/// and case folding: compiling Unicode ones took three times as long, which a one-shot
/// command pays for every rule its text wakes); a group is read back at the character
/// boundaries around it.
pub(crate) struct Caps<'t> {
    text: &'t str,
    caps: regex::bytes::Captures<'t>,
}

impl<'t> Caps<'t> {
    /// The groups of `caps`, a match over the bytes of `text`.
    pub(crate) fn new(text: &'t str, caps: regex::bytes::Captures<'t>) -> Caps<'t> {
        Caps { text, caps }
    }

    /// Where group `name` starts, and its text.
    pub(crate) fn name(&self, name: &str) -> Option<(usize, &'t str)> {
        self.caps.name(name).map(|m| self.span(m.start(), m.end()))
    }

    /// The text before byte `at` of the text matched (on a character boundary).
    pub(crate) fn before(&self, at: usize) -> &'t str {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        &self.text[..at]
    }

    /// The text from byte `at` of the text matched (on a character boundary) to its end.
    pub(crate) fn from(&self, at: usize) -> &'t str {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at += 1;
        }
        &self.text[at..]
    }

    /// Where the whole match starts, and its text.
    fn whole(&self) -> Option<(usize, &'t str)> {
        self.caps.get(0).map(|m| self.span(m.start(), m.end()))
    }

    /// `start..end` widened to character boundaries.
    fn span(&self, mut start: usize, mut end: usize) -> (usize, &'t str) {
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        (start, &self.text[start..end])
    }
}

/// The secret of a match: where it starts, and its text.
pub(crate) fn secret_of<'t>(caps: &Caps<'t>) -> Option<(usize, &'t str)> {
    ["s", "s2", "s3", "s4", "s5", "s6", "s7", "s8"].iter().find_map(|n| caps.name(n)).or_else(|| caps.whole())
}

/// `s` up to the first `&name=` in it.
pub(crate) fn to_next_parameter(s: &str) -> &str {
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('&') {
        let name =
            bytes[i + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')).count();
        if name > 0 && bytes.get(i + 1 + name) == Some(&b'=') {
            return &s[..i];
        }
    }
    s
}

/// What no rule reports: an existing mark.
pub(crate) fn ignored(secret: &str) -> bool {
    secret.starts_with(super::MARK_PREFIX)
}

/// A token with a provider's prefix in a pattern: a word boundary, the prefix, its body.
macro_rules! prefixed {
    ($id:literal, $title:literal, [$($k:literal),+], $pattern:literal) => {
        prefixed!($id, $title, [$($k),+], $pattern, token)
    };
    ($id:literal, $title:literal, [$($k:literal),+], $pattern:literal, $check:expr) => {
        Rule { id: $id, title: $title, keywords: &[$($k),+], scope: Scope::Token, pattern: $pattern, gate: None, check: $check }
    };
}

/// A token named by a word before it (`POSTMARK_TOKEN = …`) or with a space in it: found
/// on the keyword's line (and the next), not in a run of its own.
macro_rules! in_lines {
    ($id:literal, $title:literal, [$($k:literal),+], $pattern:literal) => {
        Rule { id: $id, title: $title, keywords: &[$($k),+], scope: Scope::Lines(0, 1), pattern: $pattern, gate: None, check: token }
    };
}

pub static RULES: &[Rule] = &[
    // Key blocks first: a block holds base64 that other rules would find in pieces.
    Rule {
        id: "private-key",
        title: "a private key block",
        keywords: &["PRIVATE KEY"],
        scope: Scope::Text,
        // PEM and PGP blocks, and RFC 4716's SSH2 blocks (four dashes and a space).
        pattern: r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)|---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----[\s\S]*?(?:---- END SSH2 (?:ENCRYPTED )?PRIVATE KEY ----|\z)",
        gate: Some(begins_key_block),
        check: key_block,
    },
    Rule {
        id: "putty-private-key",
        title: "a PuTTY private key",
        keywords: &["PuTTY-User-Key-File"],
        scope: Scope::Text,
        pattern: r"PuTTY-User-Key-File-\d:[\s\S]*?(?:Private-MAC:[ \t]*[0-9a-fA-F]*|\z)",
        gate: None,
        check: key_block,
    },
    Rule {
        id: "openvpn-static-key",
        title: "an OpenVPN static key",
        keywords: &["VPN Static key"],
        scope: Scope::Text,
        pattern: r"-----BEGIN OpenVPN Static key V1-----[\s\S]*?(?:-----END OpenVPN Static key V1-----|\z)",
        gate: Some(begins_key_block),
        check: key_block,
    },
    prefixed!("age-secret-key", "an age secret key", ["AGE-SECRET-KEY-1"], r"AGE-SECRET-KEY-1[0-9A-Z]{50,70}"),
    // Version control.
    prefixed!("github-pat", "a GitHub personal access token", ["ghp_"], r"\bghp_[0-9A-Za-z]{30,}\b", github),
    prefixed!("github-oauth", "a GitHub OAuth access token", ["gho_"], r"\bgho_[0-9A-Za-z]{30,}\b", github),
    prefixed!("github-app-token", "a GitHub app token", ["ghu_", "ghs_"], r"\bgh[us]_[0-9A-Za-z]{30,}\b", github),
    prefixed!("github-refresh-token", "a GitHub refresh token", ["ghr_"], r"\bghr_[0-9A-Za-z]{30,}\b", github),
    prefixed!(
        "github-fine-grained-pat",
        "a GitHub fine-grained personal access token",
        ["github_pat_"],
        r"\bgithub_pat_[0-9A-Za-z_]{40,}"
    ),
    prefixed!(
        "gitlab-token",
        "a GitLab token",
        [
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glcbt-",
            "glsoat-",
            "gloas-",
            "glimt-",
            "glffct-",
            "glft-",
            "glagent-",
            "glrtr-",
            "GR1348941"
        ],
        r"\b(?:(?:glpat|gldt|glrt|glrtr|glptt|glcbt|glsoat|gloas|glimt|glffct|glft|glagent)-[0-9A-Za-z_.\-]{20,}|GR1348941[0-9A-Za-z_\-]{20,})"
    ),
    prefixed!("bitbucket-app-password", "a Bitbucket app password", ["ATBB"], r"\bATBB[A-Za-z0-9_=.\-]{28,}"),
    // Chat.
    prefixed!(
        "slack-token",
        "a Slack token",
        ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe", "xapp-"],
        r"\b(?:xox[abprs]-[0-9A-Za-z\-]{10,}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9\-]{20,}|xapp-\d-[A-Za-z0-9\-]{20,})"
    ),
    prefixed!(
        "slack-webhook-url",
        "a Slack webhook URL",
        ["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_\-]{20,})"
    ),
    prefixed!(
        "discord-webhook-url",
        "a Discord webhook URL",
        ["/api/webhooks/"],
        r"discord(?:app)?\.com/api/webhooks/\d+/(?P<s>[A-Za-z0-9_\-]{30,})"
    ),
    prefixed!(
        "teams-webhook-url",
        "a Microsoft Teams webhook URL",
        ["webhook.office.com"],
        r"webhook\.office\.com/webhookb2/(?P<s>[A-Za-z0-9@/_\-]{20,})"
    ),
    prefixed!(
        "telegram-bot-token",
        "a Telegram bot token",
        [":AA"],
        r"(?:^|[^0-9A-Za-z])(?:bot)?(?P<s>\d{8,10}:AA[0-9A-Za-z_\-]{32,34})\b"
    ),
    // No keyword: a run whose dots are seven apart (`….GxYz12.…`) wakes it.
    Rule {
        id: "discord-bot-token",
        title: "a Discord bot token",
        keywords: &[],
        scope: Scope::Runs,
        pattern: r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b",
        gate: Some(discord_shaped),
        check: random,
    },
    // Payment.
    prefixed!(
        "stripe-access-token",
        "a Stripe secret key",
        ["sk_live_", "sk_test_", "rk_live_", "rk_test_", "sk_prod_", "rk_prod_"],
        r"\b[rs]k_(?:live|test|prod)_[0-9A-Za-z]{10,}\b"
    ),
    prefixed!("stripe-webhook-secret", "a Stripe webhook secret", ["whsec_"], r"\bwhsec_[0-9A-Za-z+/=]{20,}"),
    prefixed!(
        "square-access-token",
        "a Square token",
        ["sq0atp-", "sq0csp-", "EAAA"],
        r"\b(?:sq0atp-[0-9A-Za-z_\-]{22,}|sq0csp-[0-9A-Za-z_\-]{40,}|EAAA[0-9A-Za-z_\-+]{60,})"
    ),
    prefixed!(
        "flutterwave-secret-key",
        "a Flutterwave secret key",
        ["FLWSECK"],
        r"\bFLWSECK(?:_TEST)?-[0-9a-fA-F]{32}-X"
    ),
    prefixed!("shippo-api-token", "a Shippo API token", ["shippo_"], r"\bshippo_(?:live|test)_[0-9a-fA-F]{40}\b"),
    // Cloud.
    prefixed!(
        "aws-access-token",
        "an AWS access key id",
        ["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"
    ),
    prefixed!("gcp-api-key", "a Google API key", ["AIza"], r"\bAIza[0-9A-Za-z_\-]{35}"),
    prefixed!("gcp-oauth-secret", "a Google OAuth client secret", ["GOCSPX-"], r"\bGOCSPX-[0-9A-Za-z_\-]{20,}"),
    prefixed!("gcp-oauth-token", "a Google OAuth token", ["ya29."], r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    prefixed!("gcp-refresh-token", "a Google refresh token", ["1//0"], r"\b1//0[0-9A-Za-z_\-]{40,}"),
    in_lines!(
        "azure-storage-key",
        "an Azure storage or service bus key",
        ["AccountKey=", "SharedAccessKey=", "AccessKey="],
        r"(?i)\b(?:Account|SharedAccess|Primary|Secondary)?Key\s*=\s*(?P<s>[A-Za-z0-9+/]{30,}={0,2})"
    ),
    prefixed!(
        "azure-sas-token",
        "an Azure shared access signature",
        ["sig="],
        r"(?i)\bsv=\d{4}-\d\d-\d\d[^\s\x22'<>]*?[&;]sig=(?P<s>[A-Za-z0-9%+/=_\-]{20,})"
    ),
    prefixed!(
        "azure-ad-client-secret",
        "an Azure AD client secret",
        ["Q~"],
        r"\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"
    ),
    prefixed!("alibaba-access-key", "an Alibaba Cloud access key id", ["LTAI"], r"\bLTAI[A-Za-z0-9]{12,20}\b"),
    prefixed!(
        "digitalocean-token",
        "a DigitalOcean token",
        ["dop_v1_", "doo_v1_", "dor_v1_"],
        r"\bdo[por]_v1_[a-f0-9]{64}\b"
    ),
    prefixed!(
        "hashicorp-tf-api-token",
        "a Terraform Cloud API token",
        ["atlasv1"],
        r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}"
    ),
    prefixed!("vault-token", "a HashiCorp Vault token", ["hvs.", "hvb.", "hvr."], r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    prefixed!(
        "doppler-api-token",
        "a Doppler token",
        ["dp.pt.", "dp.st.", "dp.sa.", "dp.ct."],
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"
    ),
    prefixed!("pulumi-api-token", "a Pulumi access token", ["pul-"], r"\bpul-[a-f0-9]{40}\b"),
    prefixed!("databricks-api-token", "a Databricks token", ["dapi"], r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    prefixed!(
        "dockerhub-pat",
        "a Docker Hub access token",
        ["dckr_pat_", "dckr_oat_"],
        r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"
    ),
    in_lines!(
        "flyio-access-token",
        "a Fly.io token",
        ["fo1_", "FlyV1 fm"],
        r"\b(?:fo1_[A-Za-z0-9_\-]{40,}|FlyV1 fm\d_[A-Za-z0-9+/=_\-]{50,})"
    ),
    prefixed!(
        "planetscale-token",
        "a PlanetScale password or token",
        ["pscale_"],
        r"\bpscale_(?:pw|tkn|oauth)_[A-Za-z0-9_.=\-]{30,}"
    ),
    prefixed!(
        "scalingo-api-token",
        "a Scalingo token",
        ["tk-us-"],
        r"\b(?P<s>tk-us-[A-Za-z0-9_\-]{48})(?:[^A-Za-z0-9_\-]|$)"
    ),
    prefixed!("netlify-access-token", "a Netlify token", ["nfp_"], r"\bnfp_[A-Za-z0-9]{36,}"),
    prefixed!(
        "vercel-token",
        "a Vercel token",
        ["vercel_", "vcp_"],
        r"\b(?:vercel_[A-Za-z0-9]{24,}|vcp_[A-Za-z0-9]{24,})"
    ),
    prefixed!(
        "cloudflare-origin-ca-key",
        "a Cloudflare origin CA key",
        ["v1.0-"],
        r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b"
    ),
    prefixed!(
        "supabase-token",
        "a Supabase token",
        ["sbp_", "sb_secret_"],
        r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})"
    ),
    // AI.
    prefixed!(
        "anthropic-api-key",
        "an Anthropic API key",
        ["sk-ant-"],
        r"\bsk-ant-(?:api\d\d-|admin\d\d-|oat\d\d-)?[A-Za-z0-9_\-]{20,}"
    ),
    prefixed!(
        "openai-api-key",
        "an OpenAI API key",
        ["sk-"],
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
        openai
    ),
    prefixed!("huggingface-access-token", "a Hugging Face token", ["hf_"], r"\bhf_[A-Za-z]{30,40}\b"),
    prefixed!("groq-api-key", "a Groq API key", ["gsk_"], r"\bgsk_[A-Za-z0-9]{40,60}\b"),
    prefixed!("replicate-api-token", "a Replicate token", ["r8_"], r"\br8_[A-Za-z0-9]{37}\b"),
    prefixed!("perplexity-api-key", "a Perplexity API key", ["pplx-"], r"\bpplx-[A-Za-z0-9]{40,60}\b"),
    prefixed!("xai-api-key", "an xAI API key", ["xai-"], r"\bxai-[A-Za-z0-9]{60,}\b"),
    // Package registries.
    prefixed!("npm-access-token", "an npm access token", ["npm_"], r"\bnpm_[A-Za-z0-9]{32,40}\b", github),
    prefixed!("pypi-upload-token", "a PyPI upload token", ["pypi-"], r"\bpypi-[A-Za-z0-9_\-]{50,}"),
    prefixed!("rubygems-api-token", "a RubyGems API key", ["rubygems_"], r"\brubygems_[a-f0-9]{48}\b"),
    prefixed!("nuget-api-key", "a NuGet API key", ["oy2"], r"\boy2[a-z0-9]{43}\b"),
    prefixed!("clojars-api-token", "a Clojars token", ["CLOJARS_"], r"\bCLOJARS_[a-z0-9]{60}\b"),
    prefixed!("jfrog-api-key", "a JFrog API key", ["AKCp"], r"\bAKCp[A-Za-z0-9]{69}\b"),
    // Mail, monitoring, SaaS.
    prefixed!(
        "sendgrid-api-token",
        "a SendGrid API key",
        ["SG."],
        r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"
    ),
    prefixed!(
        "sendinblue-api-token",
        "a Brevo (Sendinblue) API key",
        ["xkeysib-", "xsmtpsib-"],
        r"\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}\b"
    ),
    prefixed!("mailgun-private-api-token", "a Mailgun API key", ["key-"], r"\bkey-[a-f0-9]{32}\b"),
    prefixed!("mailchimp-api-key", "a Mailchimp API key", ["-us"], r"\b[a-f0-9]{32}-us\d{1,2}\b"),
    in_lines!(
        "postmark-token",
        "a Postmark token",
        ["postmark"],
        r"(?i)postmark[\w.\-]{0,30}\W{1,5}(?P<s>[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})"
    ),
    prefixed!("twilio-api-key", "a Twilio API key", ["SK"], r"\bSK[0-9a-fA-F]{32}\b"),
    prefixed!(
        "shopify-token",
        "a Shopify token",
        ["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"
    ),
    prefixed!(
        "atlassian-api-token",
        "an Atlassian API token",
        ["ATATT3", "ATCTT3"],
        r"\bAT[AC]TT3[A-Za-z0-9_=\-]{50,}"
    ),
    prefixed!("linear-api-key", "a Linear API key", ["lin_api_"], r"\blin_api_[A-Za-z0-9]{40}\b"),
    prefixed!(
        "notion-token",
        "a Notion token",
        ["ntn_", "secret_"],
        r"\b(?:ntn_[A-Za-z0-9]{40,50}|secret_[A-Za-z0-9]{43})\b",
        random
    ),
    prefixed!("figma-token", "a Figma token", ["figd_", "figu_"], r"\bfig[du]_[A-Za-z0-9_\-]{40,}"),
    prefixed!("postman-api-token", "a Postman API key", ["PMAK-"], r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b"),
    prefixed!("new-relic-api-key", "a New Relic key", ["NRAK-", "NRII-", "NRJS-"], r"\bNR(?:AK|II|JS)-[A-Z0-9]{27}\b"),
    prefixed!("sentry-token", "a Sentry auth token", ["sntrys_", "sntryu_"], r"\bsntry[su]_[A-Za-z0-9+/=_]{40,}"),
    prefixed!(
        "grafana-token",
        "a Grafana token",
        ["glc_", "glsa_", "eyJrIjoi"],
        r"\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{60,}={0,2})"
    ),
    prefixed!("dynatrace-api-token", "a Dynatrace token", ["dt0c01."], r"\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b"),
    prefixed!("easypost-api-token", "an EasyPost API key", ["EZAK", "EZTK"], r"\bEZ[AT]K[a-zA-Z0-9]{54}\b"),
    prefixed!("prefect-api-token", "a Prefect token", ["pnu_"], r"\bpnu_[A-Za-z0-9]{36}\b"),
    prefixed!("readme-api-token", "a ReadMe API key", ["rdme_"], r"\brdme_[a-z0-9]{70}\b"),
    prefixed!(
        "onepassword-token",
        "a 1Password service account token",
        ["ops_eyJ"],
        r"\bops_eyJ[A-Za-z0-9+/=_\-]{50,}"
    ),
    in_lines!(
        "okta-access-token",
        "an Okta API token",
        ["okta"],
        r"(?i)okta[\w.\-]{0,30}\W{1,5}(?P<s>00[A-Za-z0-9_\-]{40})\b"
    ),
    in_lines!(
        "heroku-api-key",
        "a Heroku API key",
        ["heroku"],
        r"(?i)heroku[\w.\-]{0,30}\W{1,5}(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
    ),
    prefixed!(
        "mapbox-secret-token",
        "a Mapbox secret token",
        ["sk.eyJ"],
        r"\bsk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"
    ),
    prefixed!(
        "firebase-cloud-messaging-key",
        "a Firebase server key",
        ["AAAA"],
        r"\bAAAA[A-Za-z0-9_\-]{7}:[A-Za-z0-9_\-]{140}"
    ),
    prefixed!("dropbox-token", "a Dropbox token", ["sl."], r"\bsl\.[A-Za-z0-9_\-]{130,}"),
    prefixed!("facebook-access-token", "a Facebook access token", ["EAAC", "EAAG"], r"\bEAA[CG][A-Za-z0-9]{90,}"),
    // More providers, from their published formats (gitleaks' and Kingfisher's rules).
    prefixed!(
        "huggingface-organization-token",
        "a Hugging Face organization token",
        ["api_org_"],
        r"\bapi_org_[A-Za-z]{34}\b"
    ),
    prefixed!("heroku-api-key", "a Heroku platform key", ["HRKU-"], r"\bHRKU-[0-9A-Za-z_\-]{50,}"),
    Rule {
        id: "airtable-pat",
        title: "an Airtable personal access token",
        keywords: &["pat"],
        scope: Scope::Token,
        pattern: r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
        gate: Some(airtable_shaped),
        check: token,
    },
    prefixed!("contentful-token", "a Contentful token", ["CFPAT-"], r"\bCFPAT-[A-Za-z0-9_\-]{43}"),
    prefixed!(
        "sourcegraph-token",
        "a Sourcegraph or Segment token",
        ["sgp_", "slk_"],
        r"\b(?:sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b|sgp_[A-Za-z0-9]{64}\b|slk_[a-f0-9]{64}\b)"
    ),
    prefixed!(
        "buildkite-token",
        "a Buildkite token",
        ["bkua_", "bkaa_", "bkaj_"],
        r"\bbk(?:ua|aa|aj)_[A-Za-z0-9_.=\-]{30,}"
    ),
    prefixed!("tencent-secret-id", "a Tencent Cloud SecretId", ["AKID"], r"\bAKID[A-Za-z0-9]{32}\b", random),
    prefixed!(
        "onepassword-secret-key",
        "a 1Password account secret key",
        ["A3-"],
        r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b"
    ),
    prefixed!("adobe-client-secret", "an Adobe client secret", ["p8e-"], r"\bp8e-[A-Za-z0-9]{32}\b", random),
    prefixed!(
        "aws-bedrock-api-key",
        "an Amazon Bedrock API key",
        ["ABSK", "bedrock-api-key-"],
        r"\b(?:ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-[A-Za-z0-9+/=%\-]{60,})"
    ),
    prefixed!("artifactory-reference-token", "a JFrog reference token", ["cmVmd"], r"\bcmVmd[A-Za-z0-9]{59}\b"),
    prefixed!("clickhouse-api-secret", "a ClickHouse Cloud key secret", ["4b1d"], r"\b4b1d[A-Za-z0-9]{38}\b", random),
    prefixed!(
        "duffel-api-token",
        "a Duffel token",
        ["duffel_test_", "duffel_live_"],
        r"\bduffel_(?:test|live)_[A-Za-z0-9_=\-]{43}"
    ),
    prefixed!("frameio-api-token", "a Frame.io token", ["fio-u-"], r"\bfio-u-[A-Za-z0-9_=\-]{64}"),
    prefixed!(
        "flyio-access-token",
        "a Fly.io macaroon",
        ["fm1a_", "fm1r_", "fm2_"],
        r"\bfm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3}"
    ),
    prefixed!(
        "gitlab-session-cookie",
        "a GitLab session cookie",
        ["_gitlab_session="],
        r"_gitlab_session=(?P<s>[0-9a-z]{32})\b"
    ),
    prefixed!(
        "harness-api-key",
        "a Harness token",
        ["pat.", "sat."],
        r"\b(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b"
    ),
    prefixed!("infracost-api-token", "an Infracost token", ["ico-"], r"\bico-[A-Za-z0-9]{32}\b", random),
    prefixed!(
        "intra42-client-secret",
        "a 42 intra client secret",
        ["s-s4t2ud-", "s-s4t2af-"],
        r"\bs-s4t2(?:ud|af)-[a-f0-9]{64}\b"
    ),
    prefixed!("maxmind-license-key", "a MaxMind license key", ["_mmk"], r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b"),
    prefixed!("octopus-deploy-api-key", "an Octopus Deploy key", ["API-"], r"\bAPI-[A-Z0-9]{26}\b", random),
    prefixed!("openshift-user-token", "an OpenShift token", ["sha256~"], r"\bsha256~[A-Za-z0-9_\-]{43}"),
    prefixed!(
        "settlemint-token",
        "a SettleMint token",
        ["sm_aat_", "sm_pat_", "sm_sat_"],
        r"\bsm_(?:aat|pat|sat)_[A-Za-z0-9]{16}\b"
    ),
    prefixed!("typeform-api-token", "a Typeform token", ["tfp_"], r"\btfp_[A-Za-z0-9_.=\-]{40,59}"),
    prefixed!(
        "yandex-token",
        "a Yandex Cloud key or token",
        ["AQVN", "t1."],
        r"\b(?:AQVN[A-Za-z0-9_\-]{35,38}|t1\.[A-Za-z0-9_\-]+=*\.[A-Za-z0-9_\-]{86}=*)"
    ),
    prefixed!("sonar-api-token", "a SonarQube token", ["sqp_", "squ_", "sqa_"], r"\bsq[pua]_[a-f0-9]{40}\b"),
    prefixed!(
        "authress-access-key",
        "an Authress access key",
        [".acc_", ".acc-"],
        r"\b(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_\-][A-Za-z0-9\-]{10,32}\.[A-Za-z0-9+/_=\-]{30,120}"
    ),
    prefixed!(
        "plaid-access-token",
        "a Plaid access token",
        ["access-sandbox-", "access-development-", "access-production-"],
        r"\baccess-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    ),
    prefixed!(
        "hubspot-private-app-token",
        "a HubSpot private app token",
        ["pat-na1-", "pat-eu1-"],
        r"\bpat-(?:na|eu)1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    ),
    prefixed!(
        "circleci-token",
        "a CircleCI token",
        ["CCIPAT_", "CCIPRJ_"],
        r"\bCCIP(?:AT|RJ)_[A-Za-z0-9]{22}_[a-f0-9]{40}\b"
    ),
    prefixed!("trello-token", "a Trello token", ["ATTA"], r"\bATTA[a-fA-F0-9]{64,72}\b"),
    prefixed!("honeycomb-api-key", "a Honeycomb key", ["hcaik_", "hcxik_"], r"\bhc[ax]ik_[A-Za-z0-9]{58,64}\b"),
    prefixed!(
        "langsmith-api-key",
        "a LangSmith key",
        ["lsv2_pt_", "lsv2_sk_"],
        r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b"
    ),
    prefixed!("pinecone-api-key", "a Pinecone key", ["pcsk_"], r"\bpcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,80}\b"),
    prefixed!("crates-io-token", "a crates.io token", ["cio"], r"\bcio[A-Za-z0-9]{32}\b", random),
    prefixed!("scaleway-access-key", "a Scaleway access key", ["SCW"], r"\bSCW[A-Z0-9]{17}\b", random),
    Rule {
        id: "woocommerce-key",
        title: "a WooCommerce REST key",
        keywords: &["ck_", "cs_"],
        scope: Scope::Token,
        pattern: r"\bc[ks]_[a-f0-9]{40}\b",
        gate: Some(woocommerce_shaped),
        check: random,
    },
    Rule {
        id: "resend-api-key",
        title: "a Resend key",
        keywords: &["re_"],
        scope: Scope::Token,
        pattern: r"\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b",
        gate: Some(resend_shaped),
        check: random,
    },
    prefixed!(
        "amazon-mws-token",
        "an Amazon MWS or Login with Amazon secret",
        ["amzn.mws.", "amzn1.oa2-cs.v1."],
        r"\b(?:amzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|amzn1\.oa2-cs\.v1\.[a-f0-9]{64})\b"
    ),
    prefixed!(
        "paseto-token",
        "a PASETO token",
        ["v1.local.", "v2.local.", "v3.local.", "v4.local.", "v1.public.", "v2.public.", "v3.public.", "v4.public."],
        r"\bv[1-4]\.(?:local|public)\.[A-Za-z0-9_\-]{40,}(?:\.[A-Za-z0-9_\-]+)?"
    ),
    prefixed!(
        "braintree-access-token",
        "a Braintree access token",
        ["access_token$"],
        r"\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}\b"
    ),
    prefixed!(
        "infisical-service-token",
        "an Infisical service token",
        ["st."],
        r"\bst\.[a-f0-9\-]{36}\.[a-f0-9]{32}\.[a-f0-9]{32}\b"
    ),
    prefixed!("dependency-track-api-key", "a Dependency-Track key", ["odt_"], r"\bodt_[A-Za-z0-9]{32,255}\b", random),
    prefixed!("adafruit-api-key", "an Adafruit IO key", ["aio_"], r"\baio_[A-Za-z0-9]{28}\b", random),
    prefixed!("clickup-api-token", "a ClickUp token", ["pk_"], r"\bpk_[0-9]{6,10}_[A-Z0-9]{32}\b"),
    prefixed!("nvidia-api-key", "an NVIDIA API key", ["nvapi-"], r"\bnvapi-[A-Za-z0-9_\-]{64}"),
    prefixed!(
        "mongodb-atlas-service-secret",
        "a MongoDB Atlas service account secret",
        ["mdb_sa_sk_"],
        r"\bmdb_sa_sk_[A-Za-z0-9_\-]{40}"
    ),
    Rule {
        id: "elevenlabs-api-key",
        title: "an ElevenLabs key",
        keywords: &["sk_"],
        scope: Scope::Token,
        pattern: r"\bsk_[a-f0-9]{48}\b",
        gate: Some(elevenlabs_shaped),
        check: random,
    },
    prefixed!("gcs-hmac-access-id", "a Cloud Storage HMAC access id", ["GOOG1"], r"\bGOOG1[A-Z0-9]{56}\b"),
    prefixed!(
        "azure-function-key",
        "an Azure Functions key in a URL",
        ["azurewebsites.net"],
        r"azurewebsites\.net/[^\s\x22'<>]*?[?&]code=(?P<s>[A-Za-z0-9_\-]{20,}={0,2})"
    ),
    prefixed!(
        "twitter-bearer-token",
        "a Twitter bearer token",
        ["AAAAAAAAAAAAAAAAAAAAA"],
        r"\bA{20,24}[A-Za-z0-9%]{60,120}",
        twitter_bearer
    ),
    prefixed!("stackhawk-api-key", "a StackHawk key", ["hawk."], r"\bhawk\.[A-Za-z0-9_\-]{20}\.[A-Za-z0-9_\-]{20}"),
    prefixed!("ubidots-token", "an Ubidots token", ["BBFF-"], r"\bBBFF-[A-Za-z0-9]{30}\b"),
    prefixed!("fleetbase-api-key", "a Fleetbase key", ["flb_live_"], r"\bflb_live_[A-Za-z0-9]{20}\b"),
    prefixed!("flexport-api-key", "a Flexport key", ["shltm_"], r"\bshltm_[A-Za-z0-9_\-]{40}"),
    prefixed!("pagarme-api-key", "a Pagar.me key", ["ak_live_"], r"\bak_live_[A-Za-z0-9]{30}\b"),
    // Tokens in general shapes.
    prefixed!(
        "jwt",
        "a JSON Web Token",
        ["eyJ"],
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
        any
    ),
    // Credentials in URLs, connection strings, headers and commands.
    Rule {
        id: "url-credentials",
        title: "a password in a URL",
        keywords: &["://"],
        scope: Scope::UserInfo,
        pattern: r#"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/@"'<>]*:(?P<s>[^\s/@"'<>]+)@[^\s/@"'<>]"#,
        gate: Some(has_at),
        check: url_password,
    },
    Rule {
        id: "auth-header",
        title: "an Authorization header",
        keywords: &["authorization"],
        scope: Scope::Lines(0, 1),
        pattern: r#"(?i)\b(?:proxy-)?authorization\b["']?\s*[:=,]\s*["']?(?:bearer|basic|token|bot|digest|negotiate|apikey|api-key|sso-key|key|aws4-hmac-sha256|otr|hmac|ssws)[ \t]+(?P<s>[^\s"',;]{6,}(?:[ \t]*,[ \t]*[A-Za-z]+=[^\s"',;]+)*)"#,
        gate: Some(authorization_given),
        check: header,
    },
    Rule {
        id: "bearer-token",
        title: "a bearer token",
        keywords: &["bearer"],
        scope: Scope::Lines(0, 0),
        pattern: r"(?i)\bbearer[ \t]+(?P<s>[A-Za-z0-9._~+/\-]{16,}=*)",
        gate: Some(bearer_given),
        check: random,
    },
    Rule {
        id: "cli-password",
        title: "a password on a command line",
        keywords: &["mysql", "mariadb", "sshpass", "redis-cli", "curl", "docker", "htpasswd", "-u", "--user"],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?:\b(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)\b[^\n]*?[ \t]-p(?:"(?P<s>[^"\n]+)"|'(?P<s2>[^'\n]+)'|(?P<s3>[^\s"'-][^\s"']*))|\bsshpass[ \t]+-p[ \t]*(?P<s4>\S+)|\bredis-cli\b[^\n]*?[ \t]-a[ \t]+(?P<s5>\S+)|(?:^|[ \t])(?:-u|--user)[ \t]+["']?[^\s:"']+:(?P<s6>[^\s"']+)|\bdocker[ \t]+login\b[^\n]*?[ \t]-p[ \t]+(?P<s7>[^\s"']+)|\bhtpasswd[ \t]+-[A-Za-z]*b[A-Za-z]*[ \t]+(?:-\S+[ \t]+)*\S+[ \t]+\S+[ \t]+(?P<s8>[^\s"']+))"#,
        gate: Some(has_flag),
        check: password_value,
    },
    Rule {
        id: "url-secret-parameter",
        title: "a secret in a URL query",
        keywords: &["key", "token", "secret", "pass", "pwd", "auth", "signature"],
        scope: Scope::Named(0, 0, b"="),
        pattern: r"(?i)[?&](?P<name>[a-z0-9_.\-]*?(?:api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|token|secret|password|passwd|pwd|signature|client[_\-]?secret|key|auth))=(?P<s>[^&\s#\x22'<>]{4,})",
        gate: Some(url_parameter),
        check: assigned,
    },
    Rule {
        id: "url-credentials",
        title: "a password in a connection string",
        keywords: &["@tcp(", "@unix("],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?:^|[\s"'`])[A-Za-z0-9_.\-]+:(?P<s>[^\s@/"']+)@(?:tcp|unix)\("#,
        gate: None,
        check: url_password,
    },
    Rule {
        id: "netrc-password",
        title: "a password in a .netrc entry",
        keywords: &["machine"],
        scope: Scope::Lines(0, 2),
        pattern: r"(?s)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<s>\S+)",
        gate: Some(names_password),
        check: password_value,
    },
    Rule {
        id: "pgpass-password",
        title: "a password in a .pgpass line",
        keywords: &[],
        scope: Scope::Runs,
        pattern: r"(?m)^[A-Za-z0-9_.\-*]+:(?:\d+|\*):[^:\s]+:[^:\s]+:(?P<s>[^:\s]+)\r?$",
        gate: Some(pgpass_shaped),
        check: password_value,
    },
    Rule {
        id: "password-argument",
        title: "a password passed to a credentials call",
        keywords: &["Credential", "PasswordAuthentication", "BasicAuth", "basic_auth"],
        scope: Scope::Lines(0, 2),
        pattern: r#"(?:NetworkCredential|UsernamePasswordCredentials|PasswordAuthentication|HTTPBasicAuth|HTTPDigestAuth|SetBasicAuth|BasicAuth|basic_auth)\(\s*["'][^"'\r\n]*["']\s*,\s*["'](?P<s>[^"'\r\n]+)["']"#,
        gate: Some(has_call),
        check: password_value,
    },
    Rule {
        id: "twilio-auth-token",
        title: "a Twilio auth token",
        keywords: &["twilio", "account_sid", "accountSid"],
        scope: Scope::Runs,
        pattern: r#"["'](?P<s>[a-f0-9]{32})["']"#,
        gate: Some(quoted_hex_32),
        check: random,
    },
    Rule {
        id: "azure-devops-pat",
        title: "an Azure DevOps personal access token",
        keywords: &["devops", "dev.azure.com", "visualstudio.com"],
        scope: Scope::Runs,
        pattern: r"\b(?P<s>[a-z2-7]{52})\b",
        gate: Some(holds_fifty_two),
        check: random,
    },
    Rule {
        id: "laravel-app-key",
        title: "a Laravel application key",
        keywords: &["base64:"],
        scope: Scope::Lines(0, 1),
        pattern: r#"(?i)app_key['"]?\s*(?:=>|=|,|:)\s*['"]?(?P<s>base64:[A-Za-z0-9+/]{32,}={0,2})"#,
        gate: Some(names_app_key),
        check: token,
    },
    Rule {
        id: "private-key",
        title: "a private key block, base64-encoded",
        keywords: &["LS0tLS1CRUdJTi"],
        scope: Scope::Token,
        pattern: r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{40,}",
        gate: None,
        check: encoded_key_block,
    },
    Rule {
        id: "wireguard-private-key",
        title: "a WireGuard private key",
        keywords: &["privatekey", "private-key"],
        scope: Scope::Lines(0, 1),
        pattern: r"(?i)private-?key\s*(?:=\s*|\s+(?:<\(echo\s+)?)(?P<s>[A-Za-z0-9+/]{42,43}=)",
        gate: Some(wireguard_shaped),
        check: token,
    },
    Rule {
        id: "ethereum-private-key",
        title: "an Ethereum private key",
        keywords: &["wallet"],
        scope: Scope::Lines(0, 1),
        pattern: r#"(?i)\bWallet\(\s*["'](?P<s>(?:0x)?[a-f0-9]{64})["']"#,
        gate: Some(wallet_call),
        check: any,
    },
    prefixed!(
        "tailscale-auth-key",
        "a Tailscale key",
        ["tskey-"],
        r"\btskey-(?:auth|client|api|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"
    ),
    Rule {
        id: "jwk-private-key",
        title: "the private part of a JSON Web Key",
        keywords: &["\"kty\"", "kty:"],
        scope: Scope::Lines(12, 12),
        pattern: r#"["']?\b(?:d|p|q|dp|dq|qi|k)\b["']?[ \t]*:[ \t]*["'](?P<s>[A-Za-z0-9_\-]{20,}={0,2})["']"#,
        gate: Some(jwk_private_member),
        check: random_or_long,
    },
    Rule {
        id: "sql-password",
        title: "a password in an SQL statement",
        keywords: &["identified"],
        scope: Scope::Lines(0, 1),
        pattern: r#"(?i)\b(?:user|role|login|grant)\b[^;\r\n]*?\bidentified[ \t]+(?:with[ \t]+\S+[ \t]+)?by[ \t]+(?:'(?P<s>[^'\r\n]+)'|"(?P<s2>[^"\r\n]+)"|(?P<s3>[^\s'";]+))"#,
        gate: Some(identified_by),
        check: sql_password,
    },
    Rule {
        id: "powershell-password",
        title: "a password made into a SecureString",
        keywords: &["o-SecureString"],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?i)ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)')"#,
        gate: None,
        check: password_value_literal,
    },
    Rule {
        id: "config-password",
        title: "a password in a server's configuration",
        keywords: &["requirepass", "erauth", "ndpw", "otpw"],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?im)^[ \t]*(?:requirepass|masterauth|bindpw|rootpw)[ \t]+(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s3>[^\s"'#]+))"#,
        gate: None,
        check: cleartext_password,
    },
    Rule {
        id: "session-cookie",
        title: "a session cookie",
        keywords: &["okie:"],
        scope: Scope::Lines(0, 0),
        pattern: r"(?i)\b(?:set-)?cookie:[^\r\n]*?(?:^|[\s;:])(?P<name>[A-Za-z0-9_.\-]*(?:sess(?:ion)?(?:id)?|sid|auth[_\-]?token|remember[_\-]?token|access[_\-]?token))=(?P<s>[A-Za-z0-9%+/=_.\-]{16,})",
        gate: None,
        check: random_or_long,
    },
    Rule {
        id: "command-password",
        title: "a password given to a database or directory client",
        keywords: &["-w", "-p", "-u", "--user", "sqlplus"],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?:\bldap[a-z]+\b[^\n]*?[ \t]-w[ \t]+(?:"(?P<s>[^"\n]+)"|'(?P<s2>[^'\n]+)'|(?P<s3>[^\s"'-][^\s"']*))|\b(?:sqlcmd|bcp)\b[^\n]*?[ \t]-P[ \t]*(?:"(?P<s4>[^"\n]+)"|(?P<s5>[^\s"'-][^\s"']*))|\bsmbclient\b[^\n]*?[ \t](?:-U|--user)[ \t=]+["']?[^\s%"']+%(?P<s6>[^\s"']+)|\bsqlplus[ \t]+(?:-[A-Za-z]+[ \t]+)*["']?[A-Za-z0-9_$#]+/(?P<s7>[^\s@/"']+)@|\bpsexec\b[^\n]*?[ \t]-p[ \t]+(?P<s8>[^\s"']+))"#,
        gate: Some(tool_password_flag),
        check: password_value,
    },
    Rule {
        id: "command-password",
        title: "a password given to `net use`",
        keywords: &["/user:"],
        scope: Scope::Lines(0, 0),
        pattern: r#"(?i)\bnet[ \t]+use[ \t]+(?:[A-Z]:[ \t]+)?\\\\\S+[ \t]+(?:(?P<s>[^\s/"'*][^\s"']*)[ \t]+/user:\S+|/user:\S+[ \t]+(?P<s2>[^\s/"'*][^\s"']*))"#,
        gate: Some(net_use_shaped),
        check: password_value,
    },
    // Values of secret-looking names: code, env, YAML, JSON, XML, flags.
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["pass", "pwd", "pw", "psk", "secret", "token", "key", "auth", "credential", "salt", "cookie"],
        scope: Scope::Named(0, 0, b"="),
        pattern: r#"(?i)(?:^|[^a-z0-9_])(?P<name>[a-z0-9_.\-]*?(?:password|passwd|passphrase|pwd|pass|pw|psk|secret|token|api[_.\-]?key|apikey|access[_.\-]?key|private[_.\-]?key[_.\-]?id|private[_.\-]?key|credentials?|key|key_base|auth|salt|cookie)\d{0,3})["']?\]?[ \t]*(?P<sep>=>|:=|\?=|=)[ \t]*(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|`(?P<s3>[^`\r\n]+)`|(?P<s4>[^\s"'`,;)\]}>]+))"#,
        gate: Some(assigned_with_equals),
        check: assigned,
    },
    // YAML and prose put a colon between a name and its value; a value that runs to the end
    // of its line may have spaces in it (a passphrase).
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["pass", "pwd", "pw", "secret", "token", "key", "auth", "credential", "salt", "cookie"],
        scope: Scope::Named(0, 0, b":"),
        pattern: r#"(?im)(?:^|[^a-z0-9_])(?P<name>[a-z0-9_.\-]*?(?:password|passwd|passphrase|pwd|pass|pw|psk|secret|token|api[_.\-]?key|apikey|access[_.\-]?key|private[_.\-]?key[_.\-]?id|private[_.\-]?key|credentials?|key|key_base|auth|salt|cookie)\d{0,3})["']?[ \t]*(?P<sep>:)[ \t]*(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s4>[^\s"'`,;)\]}>]+(?:[ \t]+[^\s"'`,;:=#)\]}>]+){1,8})[ \t]*(?:$|\r|[ \t]#)|(?P<s5>[^\s"'`,;)\]}>]+))"#,
        gate: Some(assigned_with_colon),
        check: assigned,
    },
    Rule {
        id: "secret-flag",
        title: "a secret passed as a command-line flag",
        keywords: &["pass", "pwd", "secret", "token", "key", "auth"],
        scope: Scope::Named(0, 0, b"-"),
        pattern: r#"(?i)(?:^|[ \t])--?(?P<name>(?:[a-z0-9][a-z0-9_\-]*?)?(?:password|passwd|passphrase|pass|passin|passout|pwd|token|secret|api[_\-]?key|apikey|access[_\-]?key|auth|key))[ \t]+(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s4>[^\s"'\-][^\s"']*))"#,
        gate: Some(flag_given),
        check: assigned,
    },
    // Kubernetes' `- name: DB_PASSWORD` followed by `value: …`.
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["value:"],
        scope: Scope::Lines(1, 0),
        pattern: r#"(?i)\bname:[ \t]*["']?(?P<name>[A-Za-z0-9_.\-]+)["']?[ \t]*\r?\n[ \t]*value:[ \t]*(?:"(?P<s>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s4>[^\s"']+))"#,
        gate: Some(secret_name_before_value),
        check: assigned,
    },
    // PHP's `define('DB_PASSWORD', '…')` (WordPress' keys and salts).
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["define"],
        scope: Scope::Lines(0, 1),
        pattern: r#"(?i)\bdefine\(\s*['"](?P<name>[A-Z0-9_]*(?:KEY|SALT|PASSWORD|PASS|SECRET|TOKEN))['"]\s*,\s*(?:'(?P<s>[^'\r\n]+)'|"(?P<s2>[^"\r\n]+)")"#,
        gate: Some(define_call),
        check: defined,
    },
    // A name and its value as two strings: `setProperty("password", "…")`.
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["pass", "secret", "token", "key", "credential"],
        scope: Scope::Named(1, 1, b","),
        pattern: r#"(?i)["'](?P<name>[a-z0-9_.\-]*(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key|credentials?))["']\s*,\s*["'](?P<s>[^"'\r\n]+)["']"#,
        gate: Some(quoted_pair),
        check: assigned,
    },
    // .NET's `<add key="ClearTextPassword" value="…" />`.
    Rule {
        id: "secret-assignment",
        title: "a value assigned to a secret-looking name",
        keywords: &["key"],
        scope: Scope::Named(0, 1, b"="),
        pattern: r#"(?i)\bkey\s*=\s*"(?P<name>[^"]*(?:password|secret|token|apikey|api_key))"\s+value\s*=\s*"(?P<s>[^"]+)""#,
        gate: Some(key_attribute),
        check: assigned,
    },
    Rule {
        id: "secret-xml-element",
        title: "a secret in an XML element",
        keywords: &["pass", "secret", "token", "key"],
        scope: Scope::Named(0, 0, b">"),
        pattern: r"(?i)<(?P<name>[a-z0-9_:\-]*?(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key))>(?P<s>[^<\r\n]+)</",
        gate: Some(element_value),
        check: assigned,
    },
    // A bare AWS secret access key: 40 characters of base64, random-looking.
    Rule {
        id: "aws-secret-key",
        title: "an AWS secret access key",
        keywords: &[],
        scope: Scope::Runs,
        pattern: r"(?:^|[\s\x22'`=:,(\[{>|])(?P<s>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=_\-.])",
        gate: Some(holds_forty),
        check: aws_secret,
    },
    // Last: a name given a value in code or configuration is named by the rules above.
    Rule {
        id: "password-in-prose",
        title: "a password told in a sentence",
        keywords: super::prose::KEYWORDS,
        scope: Scope::Lines(0, 0),
        pattern: super::prose::PATTERN,
        gate: Some(super::prose::told),
        check: super::prose::check,
    },
];

/// Whether `t` holds `prefix` at a word's start followed by `len` bytes that `class` takes
/// and then no more of them: the shape of a token whose prefix is also a common start of
/// identifiers (`cs_`, `re_`, `sk_`, `pat`).
fn shaped(t: &[u8], prefix: &[u8], len: usize, class: fn(u8) -> bool) -> bool {
    memchr::memmem::find_iter(t, prefix).any(|at| {
        let body = &t[at + prefix.len()..];
        (at == 0 || !is_word_byte(t[at - 1]))
            && body.len() >= len
            && body[..len].iter().all(|&b| class(b))
            && body.get(len).is_none_or(|&b| !class(b))
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn hex_lower(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// `pat`, 14 letters and digits, a dot and 64 hex digits: an Airtable token.
fn airtable_shaped(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.text, b"pat").any(|at| {
        let t = &w.text[at + 3..];
        t.len() >= 79
            && t[..14].iter().all(u8::is_ascii_alphanumeric)
            && t[14] == b'.'
            && t[15..79].iter().all(|&b| hex_lower(b))
    })
}

/// `ck_` or `cs_` and 40 hex digits.
fn woocommerce_shaped(w: &Window<'_>) -> bool {
    shaped(w.text, b"ck_", 40, hex_lower) || shaped(w.text, b"cs_", 40, hex_lower)
}

/// `re_`, 8 letters and digits, `_` and 24 more.
fn resend_shaped(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.text, b"re_").any(|at| {
        let t = &w.text[at + 3..];
        (at == 0 || !is_word_byte(w.text[at - 1]))
            && t.len() >= 33
            && t[..8].iter().all(u8::is_ascii_alphanumeric)
            && t[8] == b'_'
            && t[9..33].iter().all(u8::is_ascii_alphanumeric)
    })
}

/// `sk_` and 48 hex digits.
fn elevenlabs_shaped(w: &Window<'_>) -> bool {
    shaped(w.text, b"sk_", 48, hex_lower)
}

/// A window near a JWK's `kty` that gives one of its private members (`d`, `p`, `q`, `dp`,
/// `dq`, `qi`, or a symmetric key's `k`) a value: a public key has none of them.
fn jwk_private_member(w: &Window<'_>) -> bool {
    const MEMBERS: [&[u8]; 7] = [b"d", b"p", b"q", b"dp", b"dq", b"qi", b"k"];
    memchr::memchr_iter(b':', w.text).any(|at| {
        let before = &w.text[..at];
        let before = before.strip_suffix(b" ").unwrap_or(before);
        let name = before.strip_suffix(b"\"").or_else(|| before.strip_suffix(b"'")).unwrap_or(before);
        MEMBERS
            .iter()
            .any(|m| name.ends_with(m) && name.len() > m.len() && !is_word_byte(name[name.len() - m.len() - 1]))
    })
}

/// A window with an SQL statement that sets a password: `CREATE USER`, `ALTER USER`,
/// `CREATE ROLE`, `GRANT` or `CREATE LOGIN` before `IDENTIFIED … BY`.
fn identified_by(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.lower, b"identified").any(|at| {
        let before = &w.lower[..at];
        let statement =
            [&b"user "[..], b"role ", b"login ", b"grant "].iter().any(|k| memchr::memmem::find(before, k).is_some());
        statement && memchr::memmem::find(&w.lower[at..], b" by ").is_some()
    })
}

/// The rest of the line after each `tool` in a window's lowercase copy, as written.
fn after_tool<'w>(w: &Window<'w>, tool: &[u8]) -> impl Iterator<Item = &'w [u8]> {
    let (text, lower) = (w.text, w.lower);
    memchr::memmem::find_iter(lower, tool).map(move |at| {
        let from = at + tool.len();
        let end = memchr::memchr(b'\n', &text[from..]).map_or(text.len(), |e| from + e);
        &text[from..end]
    })
}

/// A window with a command and its flag that takes a password: `ldapsearch … -w`,
/// `sqlcmd … -P`, `smbclient -U user%…`, `sqlplus user/…@`, `psexec … -p`.
fn tool_password_flag(w: &Window<'_>) -> bool {
    let flag = |rest: &[u8], f: &[u8]| {
        memchr::memmem::find_iter(rest, f).any(|at| at > 0 && matches!(rest[at - 1], b' ' | b'\t'))
    };
    after_tool(w, b"ldap").any(|rest| flag(rest, b"-w ") || flag(rest, b"-w\t"))
        || after_tool(w, b"sqlcmd").chain(after_tool(w, b"bcp ")).any(|rest| flag(rest, b"-P"))
        || after_tool(w, b"smbclient").any(|rest| memchr::memchr(b'%', rest).is_some())
        || after_tool(w, b"sqlplus")
            .any(|rest| rest.split(u8::is_ascii_whitespace).any(|word| word.contains(&b'/') && word.contains(&b'@')))
        || after_tool(w, b"psexec").any(|rest| flag(rest, b"-p "))
}

/// `net use` with a share (`\\\\server\\share`) and `/user:` on its line.
fn net_use_shaped(w: &Window<'_>) -> bool {
    after_tool(w, b"net use").any(|rest| {
        memchr::memmem::find(rest, b"\\\\").is_some()
            && memchr::memmem::find(&rest.to_ascii_lowercase(), b"/user:").is_some()
    })
}

/// A window with an `@`: a URL with user info.
fn has_at(w: &Window<'_>) -> bool {
    memchr::memchr(b'@', w.text).is_some()
}

/// A window with a flag that can take a password: `-p`, `-a pw`, `-u user:pw` or
/// `--user user:pw`, or htpasswd's `-b` (a `-` at a line's start or after a blank).
fn has_flag(w: &Window<'_>) -> bool {
    let t = w.text;
    let htpasswd = memchr::memmem::find(w.lower, b"htpasswd").is_some();
    memchr::memchr_iter(b'-', t).any(|at| {
        if at > 0 && !matches!(t[at - 1], b' ' | b'\t' | b'\n') {
            return false;
        }
        let flag = t[at + 1..].iter().take_while(|&&b| b.is_ascii_alphanumeric() || b == b'-').count();
        let after = &t[at + 1 + flag..];
        let user = || {
            let value = after_blanks(after);
            value.len() < after.len() && value.iter().take_while(|b| !b.is_ascii_whitespace()).any(|&b| b == b':')
        };
        match &t[at + 1..at + 1 + flag] {
            [b'p', ..] => true,
            b"a" => after.first().is_some_and(|&b| b == b' ' || b == b'\t'),
            b"u" | b"-user" => user(),
            f => htpasswd && f.contains(&b'b'),
        }
    })
}

/// A window that says `login` and `password` (a `.netrc` entry).
fn names_password(w: &Window<'_>) -> bool {
    memchr::memmem::find(w.lower, b"password").is_some() && memchr::memmem::find(w.lower, b"login").is_some()
}

/// A window with a `.pgpass` line: a word of five fields split by `:`, the second a port or
/// `*`.
fn pgpass_shaped(w: &Window<'_>) -> bool {
    // Every run of the text comes here: most hold no `:` at all.
    memchr::memchr(b':', w.text).is_some()
        && w.text.split(u8::is_ascii_whitespace).any(|word| {
            let mut fields = word.split(|&b| b == b':');
            let (Some(host), Some(port)) = (fields.next(), fields.next()) else { return false };
            !host.is_empty()
                && (port == b"*" || !port.is_empty() && port.iter().all(u8::is_ascii_digit))
                && fields.filter(|f| !f.is_empty()).count() >= 3
        })
}

/// A byte of a Discord token's three parts.
fn discord_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

/// A window shaped like a Discord bot token: two dots seven apart, six token characters
/// between them, at least 24 before the first and 27 after the second.
fn discord_shaped(w: &Window<'_>) -> bool {
    let t = w.text;
    // Every run of the text comes here: most are shorter than a token.
    t.len() >= 24 + 1 + 6 + 1 + 27
        && memchr::memchr_iter(b'.', t).any(|at| {
            t.get(at + 7) == Some(&b'.')
                && t[at + 1..at + 7].iter().all(|&b| discord_byte(b))
                && t[..at].iter().rev().take(24).filter(|&&b| discord_byte(b)).count() == 24
                && t[at + 8..].iter().take(27).filter(|&&b| discord_byte(b)).count() == 27
        })
}

/// A window with a call that takes credentials: `NetworkCredential("`, `BasicAuth('`.
fn has_call(w: &Window<'_>) -> bool {
    const CALLS: [&[u8]; 4] = [b"Credential", b"Credentials", b"Authentication", b"Auth"];
    memchr::memchr_iter(b'(', w.text).any(|at| {
        let before = &w.text[..at];
        (CALLS.iter().any(|c| before.ends_with(c)) || before.ends_with(b"basic_auth"))
            && w.text[at + 1..].iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| b == b'"' || b == b'\'')
    })
}

/// A window with a run of exactly 40 base64 characters that looks like an AWS secret key.
fn holds_forty(w: &Window<'_>) -> bool {
    // Every run of the text comes here: most are shorter than a key.
    w.text.len() >= 40
        && w.text
            .split(|&b| !(b.is_ascii_alphanumeric() || b == b'/' || b == b'+'))
            .any(|run| run.len() == 40 && std::str::from_utf8(run).is_ok_and(aws_secret_value))
}

/// A window with a word of exactly 52 characters of base32 (`a-z`, `2-7`): an Azure DevOps
/// token's shape.
fn holds_fifty_two(w: &Window<'_>) -> bool {
    // Every run of a text that names Azure DevOps comes here: most are shorter.
    w.text.len() >= 52
        && w.text
            .split(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .any(|word| word.len() == 52 && word.iter().all(|&b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)))
}

/// A window with 32 hexadecimal digits in quotes.
fn quoted_hex_32(w: &Window<'_>) -> bool {
    let t = w.text;
    memchr::memchr2_iter(b'"', b'\'', t).any(|at| {
        t.len() > at + 33
            && t[at + 1..at + 33].iter().all(|&b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && matches!(t[at + 33], b'"' | b'\'')
    })
}

/// A window with a key block that has a body: after a BEGIN line, 40 base64 characters
/// before the END line (a template's `-----BEGIN PRIVATE KEY-----\n...` has none). Every
/// character of the block counts here, the BEGIN line's too: [`key_block`] counts fewer.
fn begins_key_block(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.lower, b"---- begin").chain(memchr::memmem::find_iter(w.lower, b"-----begin")).any(
        |at| {
            let after = at + 10;
            let end = [&b"-----end"[..], b"---- end"]
                .iter()
                .filter_map(|k| memchr::memmem::find(&w.lower[after..], k))
                .min()
                .map_or(w.lower.len(), |e| after + e);
            w.text[at..end].iter().filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/')).count() >= 40
        },
    )
}

/// `word`, then (after an optional quote and blanks) one of `given`, somewhere in `lower`.
fn given_after(lower: &[u8], word: &[u8], given: &[u8]) -> bool {
    memchr::memmem::find_iter(lower, word).any(|at| {
        let mut rest = &lower[at + word.len()..];
        if let [b'"' | b'\'', tail @ ..] = rest {
            rest = tail;
        }
        rest.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| given.contains(b))
    })
}

/// A window with `Authorization` given a value (`Authorization: …`, `"authorization", "…"`).
fn authorization_given(w: &Window<'_>) -> bool {
    given_after(w.lower, b"authorization", b":=,")
}

/// A window with `Bearer` and 16 token characters after it.
fn bearer_given(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.lower, b"bearer").any(|at| {
        let rest = &w.lower[at + 6..];
        let blanks = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        blanks > 0
            && rest[blanks..]
                .iter()
                .take(16)
                .filter(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'-'))
                .count()
                == 16
    })
}

fn names_app_key(w: &Window<'_>) -> bool {
    memchr::memmem::find(w.lower, b"app_key").is_some()
}

/// A window with 42 or more base64 characters and then `=`: a WireGuard key's shape.
fn wireguard_shaped(w: &Window<'_>) -> bool {
    memchr::memchr_iter(b'=', w.text).any(|at| {
        w.text[..at].iter().rev().take(42).filter(|&&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/').count()
            == 42
    })
}

fn wallet_call(w: &Window<'_>) -> bool {
    memchr::memmem::find(w.lower, b"wallet(").is_some()
}

fn define_call(w: &Window<'_>) -> bool {
    memchr::memmem::find(w.lower, b"define(").is_some()
}

/// A window with `name: X` where `X` can name a secret (Kubernetes' `- name: DB_PASSWORD`).
fn secret_name_before_value(w: &Window<'_>) -> bool {
    memchr::memmem::find_iter(w.lower, b"name:").any(|at| {
        let rest = &w.text[at + 5..];
        let blanks = rest.iter().take_while(|&&b| matches!(b, b' ' | b'\t' | b'"' | b'\'')).count();
        let len = rest[blanks..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            .count();
        std::str::from_utf8(&rest[blanks..blanks + len]).is_ok_and(|name| named_at_most(name) != Named::No)
    })
}

/// How strongly `name`, or the part of it after a `.` or `-` (what an expression's name may
/// start at), names a secret.
fn named_at_most(name: &str) -> Named {
    let mut best = named(name);
    for (i, _) in name.match_indices(['.', '-', ':']) {
        match named(&name[i + 1..]) {
            Named::Strong => return Named::Strong,
            Named::Weak => best = Named::Weak,
            Named::No => {}
        }
    }
    best
}

/// The bytes a bare value ends at (`[^\s"'`,;)\]}>]`).
fn ends_bare(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b',' | b';' | b')' | b']' | b'}' | b'>')
}

/// A byte of a value that a weak name's secret is made of (`[A-Za-z0-9+/=_-]`).
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Whether the value that starts at `value` (after the separator and its blanks) can be a
/// secret under a name of strength `strength`: it is not empty (`""`, the line's end),
/// and under a weak name (`key`, `auth`) it starts with 16 token characters.
fn value_may_be_secret(strength: Named, value: &[u8]) -> bool {
    let (inner, quoted) = match value {
        [q @ (b'"' | b'\'' | b'`'), rest @ ..] => match rest.first() {
            None | Some(b'\r' | b'\n') => return false,
            Some(b) if b == q => return false,
            Some(_) => (rest, true),
        },
        [first, ..] if !ends_bare(*first) => (value, false),
        _ => return false,
    };
    match strength {
        Named::No => false,
        Named::Strong => true,
        Named::Weak => {
            let inner =
                if quoted { &inner[inner.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..] } else { inner };
            inner.iter().take(16).filter(|&&b| token_byte(b)).count() == 16
        }
    }
}

/// The name of a [`Scope::Named`] window, as text, and where its value's byte is.
fn name_of<'w>(w: &Window<'w>) -> Option<(&'w str, usize)> {
    let (start, end, at) = w.named?;
    Some((std::str::from_utf8(&w.text[start..end]).ok()?, at))
}

/// `value` without the blanks that start it.
fn after_blanks(value: &[u8]) -> &[u8] {
    &value[value.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..]
}

/// A name given a value by `=`, `=>` or `:=` that can be a secret.
fn assigned_with_equals(w: &Window<'_>) -> bool {
    let Some((name, at)) = name_of(w) else { return true };
    let mut value = &w.text[at + 1..];
    if let [b'>', rest @ ..] = value {
        value = rest;
    }
    value_may_be_secret(named_at_most(name), after_blanks(value))
}

/// A name given a value by `:` that can be a secret.
fn assigned_with_colon(w: &Window<'_>) -> bool {
    let Some((name, at)) = name_of(w) else { return true };
    value_may_be_secret(named_at_most(name), after_blanks(&w.text[at + 1..]))
}

/// A flag (`--token`) and, after a blank, a value that can be a secret.
fn flag_given(w: &Window<'_>) -> bool {
    let Some((start, end, _)) = w.named else { return true };
    let Ok(name) = std::str::from_utf8(&w.text[start..end]) else { return true };
    let rest = &w.text[end..];
    let value = after_blanks(rest);
    value.len() < rest.len() && !value.starts_with(b"-") && value_may_be_secret(named_at_most(name), value)
}

/// A quoted name, a comma, and a quoted value that is not empty: `"password", "…"`.
fn quoted_pair(w: &Window<'_>) -> bool {
    let Some((name, at)) = name_of(w) else { return true };
    let rest = &w.text[at + 1..];
    let value = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    matches!(value.first(), Some(b'"' | b'\'')) && value_may_be_secret(named_at_most(name), value)
}

/// An XML element (`<db:password>`) with text in it.
fn element_value(w: &Window<'_>) -> bool {
    let Some((name, at)) = name_of(w) else { return true };
    let value = &w.text[at + 1..];
    !matches!(value.first(), None | Some(b'<' | b'\r' | b'\n')) && value_may_be_secret(named_at_most(name), value)
}

/// An attribute `key="…"` (a .NET setting: `<add key="ClearTextPassword" value="…" />`).
fn key_attribute(w: &Window<'_>) -> bool {
    let Some((start, end, at)) = w.named else { return true };
    w.lower[start..end].ends_with(b"key")
        && w.text[at + 1..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'"')
        && memchr::memmem::find(w.lower, b"value").is_some()
}

/// A parameter of a URL's query (`?api_key=…`, `&token=…`) with four characters or more.
fn url_parameter(w: &Window<'_>) -> bool {
    let Some((start, _, at)) = w.named else { return true };
    start > 0
        && matches!(w.text[start - 1], b'?' | b'&')
        && w.text[at + 1..]
            .iter()
            .take(4)
            .filter(|&&b| !b.is_ascii_whitespace() && !matches!(b, b'&' | b'#' | b'"' | b'\'' | b'<' | b'>'))
            .count()
            == 4
}

fn any(_: &Caps<'_>, _: &str) -> bool {
    true
}

/// A token with a provider's prefix: a secret unless it is a placeholder.
fn token(_: &Caps<'_>, s: &str) -> bool {
    !placeholder(s)
}

/// GitHub's (and npm's) tokens end in a CRC-32 of the rest in base62: a token whose
/// checksum holds is a secret whatever it looks like; otherwise it is one unless it is a
/// placeholder.
fn github(_: &Caps<'_>, s: &str) -> bool {
    checksum_holds(s) || !placeholder(s)
}

/// Whether the last six characters of `s` are the base62 CRC-32 of the 30 before them
/// (`ghp_…`, `npm_…`).
pub(crate) fn checksum_holds(s: &str) -> bool {
    let Some(underscore) = s.rfind('_') else { return false };
    let body = &s[underscore + 1..];
    if body.len() != 36 || !body.is_ascii() {
        return false;
    }
    let (random, check) = body.split_at(30);
    base62(crc32fast::hash(random.as_bytes()), 6) == check
}

/// `n` in base62 (0-9A-Za-z), left-padded with zeros to `width`.
fn base62(mut n: u32, width: usize) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// A token with a common prefix (`sk-`, a Discord token's shape): a secret when it looks
/// random (letters and digits, not a word list) and is no placeholder.
fn random(_: &Caps<'_>, s: &str) -> bool {
    !placeholder(s) && looks_random(s)
}

/// An OpenAI key: random, in long pieces (not `sk-ecdsa-sha2-nistp256-cert-v01`).
fn openai(caps: &Caps<'_>, s: &str) -> bool {
    random(caps, s) && s.split('-').any(|piece| piece.len() >= 16)
}

/// A value of `define(NAME, …)`: any under a strong name, a random-looking one under a
/// weak name (`AUTH_KEY`, `NONCE_SALT`: 64 printable characters).
fn defined(caps: &Caps<'_>, s: &str) -> bool {
    let name = caps.name("name").map_or("", |(_, m)| m);
    match named(name) {
        Named::Strong => assigned_value(name, s, true, "="),
        Named::Weak => !placeholder(s) && s.len() >= 16 && entropy(s) >= 3.5,
        Named::No => false,
    }
}

/// A value that is random-looking key material, or long enough to be one whatever it looks
/// like (a JWK's `d` is base64url of random bytes; a session id may be hex).
fn random_or_long(_: &Caps<'_>, s: &str) -> bool {
    !placeholder(s) && (looks_random(s) || s.len() >= 32 && entropy(s) >= 3.5)
}

/// A Twitter bearer token: 20-odd `A`s (its header), then random-looking characters.
fn twitter_bearer(_: &Caps<'_>, s: &str) -> bool {
    let body = s.trim_start_matches('A');
    body.len() >= 60 && entropy(body) >= 4.0 && !s.to_ascii_lowercase().contains("example")
}

/// A password in `IDENTIFIED BY …`: quoted, or bare and more than a word (not `VALUES`
/// before a hash, a bind variable, or a word of prose).
fn sql_password(caps: &Caps<'_>, s: &str) -> bool {
    let bare = caps.name("s3").is_some();
    let word = s.bytes().all(|b| b.is_ascii_alphabetic());
    !(bare && (word || s.starts_with([':', '?', '@', '&']))) && password_value(caps, s)
}

/// A password as it is typed, not a hash of it with its scheme (`{SSHA}…`, `{CRYPT}…`).
fn cleartext_password(caps: &Caps<'_>, s: &str) -> bool {
    let scheme = s.strip_prefix('{').and_then(|rest| rest.split_once('}')).is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
    });
    !scheme && password_value(caps, s)
}

/// A password given as a string literal: not a variable (`$env:PASSWORD`, `$pw`).
fn password_value_literal(caps: &Caps<'_>, s: &str) -> bool {
    !s.starts_with('$') && password_value(caps, s)
}

/// A key block encoded in base64 (a kubeconfig's `client-key-data`).
fn encoded_key_block(_: &Caps<'_>, s: &str) -> bool {
    use base64::Engine as _;
    let head = &s[..s.len().min(80) / 4 * 4];
    base64::engine::general_purpose::STANDARD
        .decode(head)
        .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains("PRIVATE KEY"))
}

/// A key block with a body (not a template with `...` inside): 40 characters or more of
/// base64 (or hex) in words of 16 or more, which armour lines (`-----BEGIN … KEY-----`),
/// headers (`Proc-Type: 4,ENCRYPTED`, `Comment: "…"`) and a template's `...` are not made
/// of. Words, not lines: a block may come with its lines joined by spaces (a usage error
/// that quotes it) or by `\n` (a JSON string).
fn key_block(_: &Caps<'_>, s: &str) -> bool {
    let unescaped = s.replace("\\n", "\n");
    let body: usize = unescaped
        .split_whitespace()
        .filter(|w| w.len() >= 16 && w.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')))
        .map(str::len)
        .sum();
    body >= 40 && !s.to_ascii_lowercase().contains("example")
}

/// A password in `scheme://user:password@host`.
fn url_password(_: &Caps<'_>, s: &str) -> bool {
    !placeholder(s) && !placeholder_word(s) && !reference(s, true)
}

/// The credentials of an Authorization header.
fn header(_: &Caps<'_>, s: &str) -> bool {
    !s.starts_with('<') && !placeholder(s) && !reference(s, true) && !placeholder_word(s)
}

/// A password after `-p`, `-a`, `-u user:`.
fn password_value(_: &Caps<'_>, s: &str) -> bool {
    !placeholder(s) && !reference(s, true) && !placeholder_word(s)
}

/// A bare 40-character value: an AWS secret key when it looks like random base64.
fn aws_secret(_: &Caps<'_>, s: &str) -> bool {
    aws_secret_value(s)
}

/// Whether `s`, 40 characters of base64, looks like an AWS secret key.
fn aws_secret_value(s: &str) -> bool {
    let has = |f: fn(&u8) -> bool| s.as_bytes().iter().any(f);
    has(u8::is_ascii_uppercase)
        && has(u8::is_ascii_lowercase)
        && has(u8::is_ascii_digit)
        && s.bytes().filter(|b| *b == b'/').count() <= 3
        && !s.contains("//")
        && entropy(s) >= 4.2
        && !placeholder(s)
        && !wordy(s)
}

/// Whether `s` reads as words run together (`SIGAbortingTargetSumLifetime32Dim46Base8`):
/// half of it or more in runs of three or more lowercase letters, which random base64
/// seldom has.
fn wordy(s: &str) -> bool {
    let (mut in_runs, mut run) = (0, 0);
    for b in s.bytes().chain(std::iter::once(b' ')) {
        if b.is_ascii_lowercase() {
            run += 1;
        } else {
            if run >= 3 {
                in_runs += run;
            }
            run = 0;
        }
    }
    in_runs * 2 >= s.len()
}

/// How strongly a name says its value is a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// `password`, `token`, `api_key`…: any value that is not a placeholder or reference.
    Strong,
    /// `*_key`, `auth`, `salt`…: a value that also looks random.
    Weak,
    No,
}

/// How strongly `name` (as written: `DB_PASSWORD`, `apiKey`, `--token`) names a secret.
fn named(name: &str) -> Named {
    let trimmed = name.trim_start_matches(['-', '.', '_']).trim_end_matches(|c: char| c.is_ascii_digit());
    let lower = trimmed.to_ascii_lowercase();
    if lower.contains("public") || lower.contains("pubkey") || lower.contains("publishable") || trimmed == "PASS" {
        // `PublicKeyToken`, `signerPubKey`: public by name; `--- PASS:` is a test's result.
        return Named::No;
    }
    let ends = |word: &str| -> bool {
        lower.ends_with(word) && {
            let before = lower.len() - word.len();
            // At a separator, a camelCase hump, or the whole name.
            before == 0
                || matches!(lower.as_bytes()[before - 1], b'_' | b'-' | b'.' | b':')
                || trimmed.as_bytes().get(before).is_some_and(u8::is_ascii_uppercase)
                    && trimmed.as_bytes().get(before - 1).is_some_and(u8::is_ascii_lowercase)
        }
    };
    const STRONG_ANYWHERE: [&str; 10] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "credentials",
        "credential",
    ];
    const STRONG_AT_WORD: [&str; 9] =
        ["pwd", "pass", "pw", "psk", "accesskey", "secretkey", "privatekey", "clientsecret", "authtoken"];
    const STRONG_COMPOUND: [&str; 7] =
        ["access_key", "access-key", "private_key", "private-key", "secret_key", "secret-key", "secret_key_base"];
    if STRONG_ANYWHERE.iter().any(|w| lower.ends_with(w)) && !lower.ends_with("_secret_id") {
        // `bypassword` is no word; `xpassword` still names a password.
        return Named::Strong;
    }
    if STRONG_AT_WORD.iter().any(|w| ends(w)) || STRONG_COMPOUND.iter().any(|w| lower.ends_with(w)) {
        return Named::Strong;
    }
    // Names that are a password whole: keytool's and OpenSSL's flags, server directives,
    // a service account's key id, other languages' words for it.
    const STRONG_WHOLE: [&str; 18] = [
        "storepass",
        "keypass",
        "srcstorepass",
        "deststorepass",
        "srckeypass",
        "destkeypass",
        "passin",
        "passout",
        "bindpw",
        "rootpw",
        "requirepass",
        "masterauth",
        "passwort",
        "kennwort",
        "wachtwoord",
        "senha",
        "contrasena",
        "private_key_id",
    ];
    if STRONG_WHOLE.iter().any(|w| lower.strip_suffix(w).is_some_and(|rest| rest.is_empty() || rest.ends_with('_'))) {
        return Named::Strong;
    }
    if ["key", "auth", "salt", "cookie", "sig", "signature"].iter().any(|w| ends(w)) {
        return Named::Weak;
    }
    Named::No
}

/// A value assigned to a name: a secret when the name says so and the value is not a
/// placeholder, a reference, a type or a word of prose.
fn assigned(caps: &Caps<'_>, s: &str) -> bool {
    let name = caps.name("name").map_or("", |(_, m)| m);
    let quoted = caps.name("s").is_some() || caps.name("s2").is_some() || caps.name("s3").is_some();
    let sep = caps.name("sep").map_or("", |(_, m)| m);
    assigned_value(name, s, quoted, sep)
}

/// Whether `value`, given to `name` (an env var, a header, a flag), is a secret.
pub(crate) fn secret_named(name: &str, value: &str) -> bool {
    assigned_value(name, value, true, "=")
}

/// `value` assigned to `name` with `sep` (`=`, `:`, …), quoted or not.
fn assigned_value(name: &str, s: &str, quoted: bool, sep: &str) -> bool {
    let strength = named(name);
    if strength == Named::No {
        return false;
    }
    let v = s.trim();
    if v.is_empty() || placeholder(v) || reference(v, quoted) || placeholder_word(v) || type_word(v) || counts_up(v) {
        return false;
    }
    if ["pk_live_", "pk_test_", "pk.eyJ"].iter().any(|p| v.starts_with(p)) {
        // Stripe's publishable keys and Mapbox's public tokens are meant to be seen.
        return false;
    }
    if v.starts_with([':', '=', '>']) {
        // `cancellation_token::none` (a path in C++), `token == x` (a comparison).
        return false;
    }
    if sep == ":" && !quoted && type_name(v) {
        // `withdrawal_credentials: Bytes32`, `secret: ExecutionAddress`: a type annotation.
        return false;
    }
    let bare_name = name.trim_start_matches(['-', '.', '_', '"', '\'']).to_ascii_lowercase().replace(['-', '.'], "_");
    if v.to_ascii_lowercase().replace(['-', '.'], "_") == bare_name {
        // `password=password`, `token=token` (a keyword argument passed on).
        return false;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) && v.len() < 6 {
        // `token: 3600`, `max_password = 64`.
        return false;
    }
    if v.chars().count() < 3 {
        // `*pw = L"…"`, `topSecret = x`: too short for a secret.
        return false;
    }
    let first_word = v.split(' ').next().unwrap_or_default();
    if type_word(first_word) && first_word.len() < v.len() {
        // `class Pass1 : public LinkerPass`.
        return false;
    }
    let sentence = v.trim_end_matches(['.', '!', '?']);
    if !quoted
        && sep == ":"
        && (sentence.bytes().all(|b| b.is_ascii_lowercase() || matches!(b, b' ' | b'-' | b'/' | b'\''))
            || !v.contains(' ') && first_word.bytes().all(|b| b.is_ascii_alphabetic()))
        && first_word.len() <= 16
    {
        // Prose and labels: "the token: it expires", "password: see below.",
        // "'token': signed/unsigned mismatch", "Resulting Token: First".
        return false;
    }
    match strength {
        Named::Strong => true,
        // `key: k8s.cluster.name`, `key = "HKCR\\MyApp"`, `salt: '0x6569…'` (a hash in a
        // spec): only a value shaped like a token is a secret under a weak name.
        Named::Weak => {
            looks_random(v)
                && v.len() >= 16
                && !v.starts_with("0x")
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-'))
        }
        Named::No => false,
    }
}

/// Whether `s` stands for a value instead of being one: a variable, a template, a call, a
/// path, a field of an object.
pub(super) fn reference(s: &str, quoted: bool) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    if ["${", "$(", "{{", "%(", "#{"].iter().any(|p| s.starts_with(p)) || s.starts_with('<') && s.ends_with('>') {
        return true;
    }
    let variable =
        |w: &str| w.len() > 1 && w.trim_start_matches('$').bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if first == '$' && (variable(s) || !quoted && s.split_whitespace().next().is_some_and(variable)) {
        // `$DB_PASSWORD`, `$$DB_PASSWORD` (escaped in a compose file); unquoted, the rest
        // of a command line after it (`$BACKUP_PASS -in db.sql`).
        return true;
    }
    if first == '%' && s[1..].contains('%') || s.contains("::") {
        // `%USERPROFILE%\.ssh\id_rsa`; `concurrency::cancellation_token` (a path in code).
        return true;
    }
    let drive = s.as_bytes().get(1..3) == Some(b":\\".as_slice());
    if s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
        || drive
        || first == '/' && s[1..].contains('/')
    {
        // A file's path.
        return true;
    }
    // A quoted value is a literal, whatever characters it holds; an unquoted one that
    // starts or goes on like code (a call, an index, a path) is code.
    if !quoted
        && (matches!(first, '%' | '{' | '<' | '[' | '(' | '@' | '/' | '~' | '\\' | '!' | '&' | '*' | '#')
            || s.starts_with("./")
            || s.starts_with("../")
            || s.contains(['(', '[', '{', '<']))
    {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if ["arn:", "vault:", "ssm:", "env:", "secret:", "ref+", "op://", "file:", "keyring:", "fd:"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return true;
    }
    // keytool's `-storepass:env NAME` and `-storepass:file PATH`.
    if lower.starts_with("env ") || lower.starts_with("file ") {
        return true;
    }
    // OpenSSL's `pass:$VAR`: the password is the variable's.
    if let Some(rest) = s.strip_prefix("pass:")
        && rest.starts_with('$')
    {
        return reference(rest, quoted);
    }
    // `self.password`, `config.api_key`, `process.env.TOKEN`: a dotted identifier.
    let identifier = |p: &str| {
        !p.is_empty()
            && p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if s.contains('.') && s.split('.').all(identifier) && !s.split('.').any(|p| p.bytes().any(|b| b.is_ascii_digit())) {
        return true;
    }
    // `Read-Host`, `Get-Secret`: a PowerShell command whose output is the value.
    if !quoted && cmdlet(s) {
        return true;
    }
    // `GITHUB_TOKEN`: the name of a variable, in capitals with underscores.
    s.len() >= 3 && s.contains('_') && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// Whether `v` holds eight characters that count up (`abcdefgh`, `12345678`): what
/// documentation writes for a value it will not show (`"private_key_id": "abcdef…"`). A
/// provider's token is judged by its shape, not this: a test's `ghp_0123456789…` is one.
fn counts_up(v: &str) -> bool {
    let mut run = 1;
    for w in v.as_bytes().windows(2) {
        run = if w[0].is_ascii_alphanumeric() && w[1] == w[0].wrapping_add(1) { run + 1 } else { 1 };
        if run >= 8 {
            return true;
        }
    }
    false
}

/// Whether `s` is named like a PowerShell command: a capitalised verb, `-`, a capitalised
/// noun (`Read-Host`, `ConvertTo-SecureString`).
fn cmdlet(s: &str) -> bool {
    let Some((verb, noun)) = s.split_once('-') else { return false };
    let capitalised = |w: &str| {
        w.len() >= 3 && w.starts_with(|c: char| c.is_ascii_uppercase()) && w.bytes().all(|b| b.is_ascii_alphabetic())
    };
    capitalised(verb) && capitalised(noun) && noun.bytes().skip(1).any(|b| b.is_ascii_lowercase())
}

/// Whether the whole of `s` is a word that stands in for a secret.
pub(super) fn placeholder_word(s: &str) -> bool {
    const WORDS: [&str; 36] = [
        "stdin",
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "key",
        "changeme",
        "change_me",
        "changeit",
        "placeholder",
        "dummy",
        "fake",
        "sample",
        "test",
        "testing",
        "todo",
        "tbd",
        "none",
        "null",
        "nil",
        "empty",
        "redacted",
        "hidden",
        "masked",
        "mypassword",
        "my_password",
        "yourpassword",
        "secret_key",
        "user",
        "username",
        "mysecret",
        "value",
    ];
    let lower = s.trim_matches(['"', '\'']).to_ascii_lowercase();
    WORDS.contains(&lower.as_str())
}

/// Whether `s` is named like a type: `Bytes32`, `ExecutionAddress`, `SecretStr`.
fn type_name(s: &str) -> bool {
    const NUMERIC: [&str; 12] =
        ["bytes", "uint", "int", "u", "i", "hash", "bytes32", "bytes48", "uint64", "uint256", "address", "gwei"];
    let lower = s.to_ascii_lowercase();
    let letters = lower.trim_end_matches(|c: char| c.is_ascii_digit());
    if NUMERIC.contains(&letters) || NUMERIC.contains(&lower.as_str()) {
        return true;
    }
    // CamelCase of two words or more, letters only.
    let humps = s.bytes().filter(u8::is_ascii_uppercase).count();
    s.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && s.bytes().all(|b| b.is_ascii_alphabetic())
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && humps >= 2
        && s.len() <= 40
}

/// Whether `s` is a type or a literal of a language rather than a value.
pub(super) fn type_word(s: &str) -> bool {
    const WORDS: [&str; 27] = [
        "public",
        "private",
        "protected",
        "string",
        "str",
        "int",
        "integer",
        "number",
        "bool",
        "boolean",
        "any",
        "object",
        "bytes",
        "secretstr",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "text",
        "char",
        "varchar",
        "secretstring",
    ];
    let lower = s.trim_end_matches(['?', ';', ',']).to_ascii_lowercase();
    WORDS.contains(&lower.as_str())
}

/// Whether `s` is a stand-in for a secret: an example, a template, a run of one character.
pub(crate) fn placeholder(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if ["example", "placeholder", "xxxx", "****", "••••", "...", "…", "redacted"].iter().any(|w| lower.contains(w))
    {
        return true;
    }
    if lower.starts_with("your")
        || lower.starts_with("my-")
        || lower.starts_with("my_")
        || lower.ends_with("-here")
        || lower.ends_with("_here")
        || lower.ends_with(" here")
        || lower.contains('<') && lower.ends_with('>')
        || lower.contains("${")
        || lower.contains("{{")
    {
        return true;
    }
    // A run of six of the same character (`ghp_000000…`, `sk-aaaaaa…`).
    let bytes = s.as_bytes();
    let mut run = 1;
    for w in bytes.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        if run >= 6 {
            return true;
        }
    }
    false
}

/// Whether `s` looks like random key material: long enough, letters and digits (or three
/// kinds of characters), and high enough entropy.
pub(crate) fn looks_random(s: &str) -> bool {
    if s.len() < 12 {
        return false;
    }
    let b = s.as_bytes();
    let kinds = [
        b.iter().any(u8::is_ascii_lowercase),
        b.iter().any(u8::is_ascii_uppercase),
        b.iter().any(u8::is_ascii_digit),
        b.iter().any(|c| !c.is_ascii_alphanumeric()),
    ];
    let n = kinds.iter().filter(|k| **k).count();
    let letters = kinds[0] || kinds[1];
    (n >= 3 || (letters && kinds[2])) && entropy(s) >= 3.0
}

/// Shannon entropy of `s` in bits per byte.
pub(crate) fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let len = s.len() as f64;
    counts.iter().filter(|c| **c > 0).map(|c| f64::from(*c) / len).map(|p| -p * p.log2()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_how_strongly_they_mean_a_secret() {
        for (name, expected) in [
            ("password", Named::Strong),
            ("DB_PASSWORD", Named::Strong),
            ("dbPassword", Named::Strong),
            ("--token", Named::Strong),
            ("_authToken", Named::Strong),
            ("apiKey", Named::Strong),
            ("AWS_SECRET_ACCESS_KEY", Named::Strong),
            ("SMTP_PASS", Named::Strong),
            ("client_secret", Named::Strong),
            ("ENCRYPTION_KEY", Named::Weak),
            ("signingKey", Named::Weak),
            ("key", Named::Weak),
            ("auth", Named::Weak),
            ("monkey", Named::No),
            ("bypass", Named::No),
            ("compass", Named::No),
            ("max_tokens", Named::No),
        ] {
            assert_eq!(named(name), expected, "{name}");
        }
    }

    #[test]
    fn a_github_checksum_is_verified() {
        // A token made here: 30 random characters and their CRC-32 in base62.
        let body = "AbCdEfGhIjKlMnOpQrStUvWxYz0123";
        let token = format!("ghp_{body}");
        let good = format!("{token}{}", base62(crc32fast::hash(body.as_bytes()), 6));
        assert!(checksum_holds(&good));
        assert!(!checksum_holds(&format!("{token}000000")));
        assert_eq!(base62(61, 2), "0z");
    }

    #[test]
    fn entropy_is_in_bits_per_character() {
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("abcd") - 2.0).abs() < 1e-9);
    }
}
