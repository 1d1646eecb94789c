//! The second suite: formats the first one lacks, and their look-alikes.
//!
//! Provider tokens with prefixes of their own (Sourcegraph, Buildkite, Tencent Cloud,
//! HubSpot, LangSmith, PASETO…), tokens whose rule exists but whose format the first suite
//! never wrote, private keys in other armours (RFC 4716's SSH2, OpenVPN, a JWK's private
//! members), passwords given to SQL, PowerShell, servers' configuration and commands,
//! passwords told in sentences in fourteen languages, and secrets in the forms a text
//! takes on its way to a log: JSON-escaped (`\/`, `\"`, `\u003d`), a JSON string inside
//! another, broken across lines by a shell's `\` or by a terminal. A few families write the
//! first suite's formats in contexts it lacks (`…-bare`); they are not counted among its
//! new formats. Look-alikes are what documentation and code print near such words: example
//! and placeholder keys, hashes, ids, public keys, commands that prompt for a password,
//! identifiers that start like a token, and sentences that name a password without one.

use super::{
    B62, B64, B64URL, DIGITS, Family, HEX, LETTERS, LOWER_NUM, PW_WORDS, Rng, UPPER_NUM, armored, b64, b64url, uuid,
};

/// Characters of a password people type: letters, digits and the signs that need no
/// quoting in a sentence.
const TYPED: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789#%+@^_~";

/// A password as people choose them: a word, digits and a sign; or random characters.
fn typed_password(r: &mut Rng) -> String {
    match r.below(3) {
        0 => {
            let (word, n) = (r.pick(PW_WORDS), r.range(2, 4));
            let digits = r.chars(DIGITS, n);
            let sign = r.chars("#%+@^_~", 1);
            format!("{word}{digits}{sign}{}", r.chars(LETTERS, 2))
        }
        1 => {
            let head = r.chars(LETTERS, 1).to_ascii_uppercase();
            format!("{head}{}{}", r.chars(LOWER_NUM, 9), r.chars(DIGITS, 2))
        }
        _ => format!("{}{}", r.chars(TYPED, 13), r.chars(DIGITS, 1)),
    }
}

/// A password that needs no escaping in a URL or a connect string (no `@`, `/`, `%`, `#`).
fn url_safe_password(r: &mut Rng) -> String {
    let (word, n) = (r.pick(PW_WORDS), r.range(3, 5));
    format!(
        "{word}{}{}",
        r.chars(DIGITS, n),
        r.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~", 6)
    )
}

/// A hex string (`lowercase`) of `n` digits.
fn hex(r: &mut Rng, n: usize) -> String {
    r.chars(HEX, n)
}

fn ssh2_private_key(r: &mut Rng) -> String {
    let body = armored(r, &[0x3f, 0x6f, 0xf9, 0xeb, 0x00, 0x00, 0x04, 0x9a], 900, 70);
    format!(
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"2048-bit rsa, deploy@build-01\"\n{body}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    )
}

fn openvpn_static_key(r: &mut Rng) -> String {
    let lines: Vec<String> = (0..16).map(|_| hex(r, 32)).collect();
    format!("-----BEGIN OpenVPN Static key V1-----\n{}\n-----END OpenVPN Static key V1-----", lines.join("\n"))
}

fn dsa_private_key(r: &mut Rng) -> String {
    let body = armored(r, &[0x30, 0x82, 0x01, 0xbb, 0x02, 0x01, 0x00, 0x02, 0x81, 0x81, 0x00], 430, 64);
    format!("-----BEGIN DSA PRIVATE KEY-----\n{body}\n-----END DSA PRIVATE KEY-----")
}

fn encrypted_private_key(r: &mut Rng) -> String {
    let body = armored(r, &[0x30, 0x82, 0x05, 0x26, 0x30, 0x50, 0x06, 0x09, 0x2a, 0x86, 0x48], 1300, 64);
    format!("-----BEGIN ENCRYPTED PRIVATE KEY-----\n{body}\n-----END ENCRYPTED PRIVATE KEY-----")
}

fn pkcs8_private_key(r: &mut Rng) -> String {
    let body = armored(r, &[0x30, 0x82, 0x04, 0xbe, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09], 1200, 64);
    format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
}

/// A PuTTY key file (format 3), private lines and MAC.
fn putty_private_key(r: &mut Rng) -> String {
    let public = armored(r, &[0, 0, 0, 7, b's', b's', b'h', b'-', b'r', b's', b'a'], 260, 64);
    let private = armored(r, &[0, 0, 1, 0], 700, 64);
    format!(
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy@build-01\nPublic-Lines: {}\n{public}\nPrivate-Lines: {}\n{private}\nPrivate-MAC: {}",
        public.lines().count(),
        private.lines().count(),
        hex(r, 64)
    )
}

/// A GitLab token: `prefix` and 20 characters of its alphabet.
fn gitlab(prefix: &str, r: &mut Rng, n: usize) -> String {
    format!("{prefix}{}", r.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", n))
}

/// A base64url JWK member of `n` random bytes.
fn jwk_member(r: &mut Rng, n: usize) -> String {
    b64url(&r.bytes(n))
}

/// A token broken by a shell's line continuation: `…\` at a line's end, the rest after.
fn continued(token: String, at: usize) -> String {
    format!("{}\\\n{}", &token[..at], &token[at..])
}

/// A password of a sentence in another language: a place or a season, digits, a sign.
fn told_password(r: &mut Rng, words: &[&str]) -> String {
    let (word, digits) = (r.pick(words), r.chars(DIGITS, 4));
    format!("{word}{digits}{}", r.chars("#%+@_", 1))
}

pub(super) const SECRETS: &[Family] = &[
    Family {
        id: "huggingface-organization-token",
        make: |r| format!("api_org_{}", r.chars(LETTERS, 34)),
        contexts: &[
            "HF_ORG_TOKEN={S}",
            "from huggingface_hub import HfApi\napi = HfApi(token=\"{S}\")\n",
            "The org token {S} was in the notebook's first cell; it has write access to acme/models.",
        ],
    },
    Family {
        id: "heroku-platform-key-bare",
        make: |r| format!("HRKU-AA{}", r.chars(B64URL, 58)),
        contexts: &[
            "heroku auth:token printed {S} — rotate it after the demo.",
            "curl -n https://api.heroku.com/apps -H \"Accept: application/vnd.heroku+json; version=3\" -u :{S}",
        ],
    },
    Family {
        id: "contentful-pat-bare",
        make: |r| format!("CFPAT-{}", r.chars(B64URL, 43)),
        contexts: &["contentful login --management-token {S}", "Pasted into Slack by mistake: {S}"],
    },
    Family {
        id: "airtable-pat-bare",
        make: |r| format!("pat{}.{}", r.chars(B62, 14), hex(r, 64)),
        contexts: &[
            "const base = new Airtable({ apiKey: '{S}' }).base('appXk29dLq0Pz7WmN');",
            "airtable token for the ops base: {S}",
        ],
    },
    Family {
        id: "sourcegraph-access-token",
        make: |r| format!("sgp_{}_{}", hex(r, 16), hex(r, 40)),
        contexts: &[
            "export SRC_ACCESS_TOKEN={S}",
            "src login https://sourcegraph.acme.dev --token {S}",
            "The Sourcegraph token {S} expires at the end of the quarter.",
        ],
    },
    Family {
        id: "sourcegraph-local-token",
        make: |r| format!("sgp_local_{}", hex(r, 40)),
        contexts: &["SRC_ACCESS_TOKEN: {S}", "curl -H 'Authorization: token {S}' https://sg.internal/.api/graphql"],
    },
    Family {
        id: "sourcegraph-cody-key",
        make: |r| format!("slk_{}", hex(r, 64)),
        contexts: &["CODY_API_KEY={S}", "cody chat --access-token {S} -m 'explain main.go'"],
    },
    Family {
        id: "segment-public-api-token",
        make: |r| format!("sgp_{}", r.chars(B62, 64)),
        contexts: &["SEGMENT_PUBLIC_API_TOKEN={S}", "token for the workspace api: {S}"],
    },
    Family {
        id: "buildkite-user-token",
        make: |r| format!("bkua_{}", hex(r, 40)),
        contexts: &[
            "export BUILDKITE_API_TOKEN={S}",
            "bk configure --org acme --token {S}",
            "curl -H \"Authorization: Bearer {S}\" https://api.buildkite.com/v2/user",
        ],
    },
    Family {
        id: "buildkite-agent-token",
        make: |r| format!("bkaa_MTA.{}", r.chars(B62, 70)),
        contexts: &["buildkite-agent start --token {S}", "agent token: {S}"],
    },
    Family {
        id: "tencent-cloud-secret-id",
        make: |r| format!("AKID{}", r.chars(B62, 32)),
        contexts: &[
            "export TENCENTCLOUD_SECRET_ID={S}",
            "cred = credential.Credential(\"{S}\", os.environ[\"TENCENTCLOUD_SECRET_KEY\"])",
            "coscmd config -a {S} -s \"$COS_SECRET\" -b backups-1250000000 -r ap-guangzhou",
        ],
    },
    Family {
        id: "tencent-cloud-secret-key",
        make: |r| r.chars(B62, 32),
        contexts: &["TENCENTCLOUD_SECRET_KEY={S}", "[default]\nsecret_id = ${COS_ID}\nsecret_key = {S}\n"],
    },
    Family {
        id: "onepassword-account-secret-key",
        make: |r| {
            format!(
                "A3-{}-{}-{}-{}-{}",
                r.chars(UPPER_NUM, 6),
                r.chars(UPPER_NUM, 11),
                r.chars(UPPER_NUM, 5),
                r.chars(UPPER_NUM, 5),
                r.chars(UPPER_NUM, 5)
            )
        },
        contexts: &["op account add --address acme.1password.com --secret-key {S}", "Emergency kit, secret key: {S}"],
    },
    Family {
        id: "adobe-client-secret",
        make: |r| format!("p8e-{}", r.chars(B62, 32)),
        contexts: &["ADOBE_CLIENT_SECRET={S}", "{\"client_id\": \"{{ADOBE_ID}}\", \"client_secret\": \"{S}\"}"],
    },
    Family {
        id: "aws-bedrock-api-key",
        make: |r| format!("ABSK{}", r.chars(B64, 132)),
        contexts: &["export AWS_BEARER_TOKEN_BEDROCK={S}", "bedrock key for the eval job: {S}"],
    },
    Family {
        id: "jfrog-reference-token",
        make: |r| format!("cmVmd{}", r.chars(B62, 59)),
        contexts: &["jf c add acme --url https://acme.jfrog.io --access-token {S}", "ARTIFACTORY_ACCESS_TOKEN={S}"],
    },
    Family {
        id: "clickhouse-cloud-key-secret",
        make: |r| format!("4b1d{}", r.chars(B62, 38)),
        contexts: &[
            "CLICKHOUSE_KEY_SECRET={S}",
            "curl --user \"$KEY_ID:{S}\" https://api.clickhouse.cloud/v1/organizations",
        ],
    },
    Family {
        id: "duffel-live-token",
        make: |r| format!("duffel_live_{}", r.chars(B64URL, 43)),
        contexts: &["DUFFEL_ACCESS_TOKEN={S}", "const duffel = new Duffel({ token: '{S}' })"],
    },
    Family {
        id: "frameio-developer-token",
        make: |r| format!("fio-u-{}", r.chars(B64URL, 64)),
        contexts: &["FRAMEIO_TOKEN={S}", "frame.io dev token: {S}"],
    },
    Family {
        id: "flyio-macaroon",
        make: |r| format!("fm2_{}", r.chars(B64, 180)),
        contexts: &["fly secrets set --app api FLY_API_TOKEN={S}", "deploy token (fly tokens create deploy): {S}"],
    },
    Family {
        id: "flyio-legacy-token",
        make: |r| format!("fo1_{}", r.chars(B64URL, 43)),
        contexts: &["FLY_ACCESS_TOKEN={S}", "flyctl auth token printed {S}"],
    },
    Family {
        id: "gitlab-session-cookie",
        make: |r| hex(r, 32),
        contexts: &[
            "curl -b '_gitlab_session={S}' https://gitlab.acme.dev/api/v4/projects",
            "Cookie: _gitlab_session={S}; event_filter=all",
        ],
    },
    Family {
        id: "harness-personal-token",
        make: |r| format!("pat.{}.{}.{}", r.chars(B64URL, 22), r.chars(B62, 24), r.chars(B62, 20)),
        contexts: &["HARNESS_API_KEY={S}", "curl -H 'x-api-key: {S}' https://app.harness.io/gateway/ng/api/projects"],
    },
    Family {
        id: "infracost-api-key",
        make: |r| format!("ico-{}", r.chars(B62, 32)),
        contexts: &["INFRACOST_API_KEY={S}", "infracost configure set api_key {S}"],
    },
    Family {
        id: "intra42-client-secret",
        make: |r| format!("s-s4t2ud-{}", hex(r, 64)),
        contexts: &["FT_CLIENT_SECRET={S}", "oauth secret of the 42 app: {S}"],
    },
    Family {
        id: "maxmind-license-key",
        make: |r| format!("{}_{}_mmk", r.chars(B62, 6), r.chars(B62, 29)),
        contexts: &["LicenseKey {S}", "MAXMIND_LICENSE_KEY={S}"],
    },
    Family {
        id: "octopus-deploy-api-key",
        make: |r| format!("API-{}", r.chars(UPPER_NUM, 26)),
        contexts: &[
            "octo push --package app.1.0.0.zip --server https://deploy.acme.dev --apiKey {S}",
            "$headers = @{ \"X-Octopus-ApiKey\" = \"{S}\" }",
        ],
    },
    Family {
        id: "openshift-user-token",
        make: |r| format!("sha256~{}", r.chars(B64URL, 43)),
        contexts: &["oc login --token={S} --server=https://api.ocp.acme.dev:6443", "token for the ci service: {S}"],
    },
    Family {
        id: "settlemint-personal-token",
        make: |r| format!("sm_pat_{}", r.chars(B62, 16)),
        contexts: &["SETTLEMINT_ACCESS_TOKEN={S}", "settlemint login --token {S}"],
    },
    Family {
        id: "typeform-personal-token",
        make: |r| format!("tfp_{}", r.chars(B62, 44)),
        contexts: &["TYPEFORM_TOKEN={S}", "curl -H \"Authorization: bearer {S}\" https://api.typeform.com/forms"],
    },
    Family {
        id: "yandex-cloud-api-key",
        make: |r| format!("AQVN{}", r.chars(B64URL, 36)),
        contexts: &[
            "YC_API_KEY={S}",
            "curl -H \"Authorization: Api-Key {S}\" https://llm.api.cloud.yandex.net/foundationModels/v1/completion",
        ],
    },
    Family {
        id: "yandex-cloud-iam-token",
        make: |r| format!("t1.{}.{}", r.chars(B64URL, 40), r.chars(B64URL, 86)),
        contexts: &["export IAM_TOKEN={S}", "yc iam create-token printed {S}"],
    },
    Family {
        id: "sonarqube-user-token",
        make: |r| format!("squ_{}", hex(r, 40)),
        contexts: &["mvn sonar:sonar -Dsonar.token={S}", "SONAR_TOKEN: {S}"],
    },
    Family {
        id: "authress-service-client-key",
        make: |r| {
            format!(
                "sc_{}.{}.acc_{}.{}",
                r.chars(LOWER_NUM, 12),
                r.chars(LOWER_NUM, 5),
                r.chars(LOWER_NUM, 16),
                r.chars(B64URL, 64)
            )
        },
        contexts: &["AUTHRESS_KEY={S}", "const client = new AuthressClient({ authressApiUrl }, '{S}');"],
    },
    Family {
        id: "plaid-access-token",
        make: |r| format!("access-production-{}", uuid(r)),
        contexts: &[
            "PLAID_ACCESS_TOKEN={S}",
            "{\"access_token\": \"{S}\", \"item_id\": \"M5eVJqLnv3tbzdngLDp9FL5OlDNxlNhlE55op\"}",
        ],
    },
    Family {
        id: "hubspot-private-app-token",
        make: |r| format!("pat-na1-{}", uuid(r)),
        contexts: &[
            "HUBSPOT_ACCESS_TOKEN={S}",
            "curl https://api.hubapi.com/crm/v3/objects/contacts -H 'authorization: Bearer {S}'",
        ],
    },
    Family {
        id: "circleci-personal-token",
        make: |r| format!("CCIPAT_{}_{}", r.chars(B62, 22), hex(r, 40)),
        contexts: &["circleci setup --token {S} --host https://circleci.com", "CIRCLECI_TOKEN={S}"],
    },
    Family {
        id: "trello-token",
        make: |r| format!("ATTA{}", r.chars(HEX, 72)),
        contexts: &["TRELLO_TOKEN={S}", "https://api.trello.com/1/members/me/boards?key=${TRELLO_KEY}&token={S}"],
    },
    Family {
        id: "honeycomb-ingest-key",
        make: |r| format!("hcaik_{}", r.chars(LOWER_NUM, 58)),
        contexts: &["OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team={S}", "HONEYCOMB_API_KEY: {S}"],
    },
    Family {
        id: "langsmith-api-key",
        make: |r| format!("lsv2_pt_{}_{}", hex(r, 32), hex(r, 10)),
        contexts: &["LANGSMITH_API_KEY={S}", "client = Client(api_key=\"{S}\")"],
    },
    Family {
        id: "pinecone-api-key",
        make: |r| format!("pcsk_{}_{}", r.chars(B62, 5), r.chars(B62, 64)),
        contexts: &["PINECONE_API_KEY={S}", "pc = Pinecone(api_key=\"{S}\")"],
    },
    Family {
        id: "crates-io-token",
        make: |r| format!("cio{}", r.chars(B62, 32)),
        contexts: &["cargo login {S}", "[registry]\ntoken = \"{S}\"\n", "CARGO_REGISTRY_TOKEN={S}"],
    },
    Family {
        id: "scaleway-access-key",
        make: |r| format!("SCW{}", r.chars(UPPER_NUM, 17)),
        contexts: &["SCW_ACCESS_KEY={S}", "scw init access-key={S} secret-key=\"$SCW_SECRET_KEY\""],
    },
    Family { id: "scaleway-secret-key", make: uuid, contexts: &["SCW_SECRET_KEY={S}", "secret_key: {S}"] },
    Family {
        id: "woocommerce-consumer-secret",
        make: |r| format!("cs_{}", hex(r, 40)),
        contexts: &[
            "const api = new WooCommerceRestApi({ url, consumerKey: process.env.WC_KEY, consumerSecret: '{S}' });",
            "curl https://shop.acme.dev/wp-json/wc/v3/orders -u ck_live:{S}",
        ],
    },
    Family {
        id: "resend-api-key",
        make: |r| format!("re_{}_{}", r.chars(B62, 8), r.chars(B62, 24)),
        contexts: &["RESEND_API_KEY={S}", "const resend = new Resend('{S}');"],
    },
    Family {
        id: "amazon-mws-auth-token",
        make: |r| format!("amzn.mws.{}", uuid(r)),
        contexts: &["MWS_AUTH_TOKEN={S}", "mws token for the EU seller: {S}"],
    },
    Family {
        id: "login-with-amazon-client-secret",
        make: |r| format!("amzn1.oa2-cs.v1.{}", hex(r, 64)),
        contexts: &["LWA_CLIENT_SECRET={S}", "{\"clientSecret\": \"{S}\", \"refreshToken\": \"${LWA_REFRESH}\"}"],
    },
    Family {
        id: "paseto-local-token",
        make: |r| format!("v4.local.{}", r.chars(B64URL, 120)),
        contexts: &["Authorization: Bearer {S}", "session token in the failing request: {S}"],
    },
    Family {
        id: "paseto-public-token",
        make: |r| format!("v4.public.{}", r.chars(B64URL, 150)),
        contexts: &["X-Session: {S}", "replayed {S} against staging"],
    },
    Family {
        id: "braintree-access-token",
        make: |r| format!("access_token$production${}${}", r.chars(LOWER_NUM, 16), hex(r, 32)),
        contexts: &["BRAINTREE_ACCESS_TOKEN={S}", "braintree:\n  token: \"{S}\"\n"],
    },
    Family {
        id: "infisical-service-token",
        make: |r| format!("st.{}.{}.{}", uuid(r), hex(r, 32), hex(r, 32)),
        contexts: &["INFISICAL_TOKEN={S}", "infisical run --token {S} -- npm start"],
    },
    Family {
        id: "dependency-track-api-key",
        make: |r| format!("odt_{}", r.chars(B62, 32)),
        contexts: &["DTRACK_API_KEY={S}", "curl -H 'X-Api-Key: {S}' https://dtrack.acme.dev/api/v1/project"],
    },
    Family {
        id: "adafruit-io-key",
        make: |r| format!("aio_{}", r.chars(B62, 28)),
        contexts: &["ADAFRUIT_IO_KEY={S}", "aio = Client('acme-iot', '{S}')"],
    },
    Family {
        id: "clickup-personal-token",
        make: |r| format!("pk_{}_{}", r.chars(DIGITS, 8), r.chars(UPPER_NUM, 32)),
        contexts: &["CLICKUP_TOKEN={S}", "curl -H 'Authorization: {S}' https://api.clickup.com/api/v2/team"],
    },
    Family {
        id: "nvidia-api-key",
        make: |r| format!("nvapi-{}", r.chars(B64URL, 64)),
        contexts: &[
            "NVIDIA_API_KEY={S}",
            "client = OpenAI(base_url=\"https://integrate.api.nvidia.com/v1\", api_key=\"{S}\")",
        ],
    },
    Family {
        id: "mongodb-atlas-service-account-secret",
        make: |r| format!("mdb_sa_sk_{}", r.chars(B62, 40)),
        contexts: &["MONGODB_ATLAS_CLIENT_SECRET={S}", "atlas auth login --client-secret {S}"],
    },
    Family {
        id: "elevenlabs-api-key",
        make: |r| format!("sk_{}", hex(r, 48)),
        contexts: &["ELEVENLABS_API_KEY={S}", "client = ElevenLabs(api_key=\"{S}\")"],
    },
    Family {
        id: "gcs-hmac-access-id",
        make: |r| format!("GOOG1{}", r.chars(UPPER_NUM, 56)),
        contexts: &["gsutil hmac create printed Access ID: {S}", "[Credentials]\ngs_access_key_id = {S}\n"],
    },
    Family {
        id: "azure-functions-key-url",
        make: |r| format!("{}==", r.chars(B64URL, 54)),
        contexts: &[
            "curl \"https://orders-api.azurewebsites.net/api/ingest?code={S}\"",
            "webhook: https://acme-hooks.azurewebsites.net/api/github?clientId=default&code={S}",
        ],
    },
    Family {
        id: "twitter-bearer-token",
        make: |r| format!("AAAAAAAAAAAAAAAAAAAAA{}%3D{}", r.chars(B62, 40), r.chars(B62, 50)),
        contexts: &[
            "TWITTER_BEARER_TOKEN={S}",
            "curl -H \"Authorization: Bearer {S}\" https://api.twitter.com/2/tweets/20",
        ],
    },
    Family {
        id: "stackhawk-api-key",
        make: |r| format!("hawk.{}.{}", r.chars(B62, 20), r.chars(B62, 20)),
        contexts: &["HAWK_API_KEY={S}", "hawk init --api-key {S}"],
    },
    Family {
        id: "ubidots-token",
        make: |r| format!("BBFF-{}", r.chars(B62, 30)),
        contexts: &["UBIDOTS_TOKEN={S}", "mqtt user {S} on industrial.api.ubidots.com"],
    },
    Family {
        id: "fleetbase-live-key",
        make: |r| format!("flb_live_{}", r.chars(B62, 20)),
        contexts: &["FLEETBASE_KEY={S}", "const fleetbase = new Fleetbase('{S}');"],
    },
    Family {
        id: "flexport-api-key",
        make: |r| format!("shltm_{}", r.chars(B64URL, 40)),
        contexts: &["FLEXPORT_API_KEY={S}", "flexport key: {S}"],
    },
    Family {
        id: "pagarme-live-key",
        make: |r| format!("ak_live_{}", r.chars(B62, 30)),
        contexts: &["PAGARME_API_KEY={S}", "pagarme.client.connect({ api_key: '{S}' })"],
    },
    // Formats whose rule exists but that the first suite never wrote.
    Family {
        id: "vercel-access-token",
        make: |r| format!("vercel_{}", r.chars(B62, 24)),
        contexts: &["VERCEL_TOKEN={S}", "vercel deploy --prod --token {S}"],
    },
    Family {
        id: "netlify-personal-token",
        make: |r| format!("nfp_{}", r.chars(B62, 40)),
        contexts: &["NETLIFY_AUTH_TOKEN={S}", "netlify deploy --prod --auth {S}"],
    },
    Family {
        id: "flutterwave-secret-key",
        make: |r| format!("FLWSECK_TEST-{}-X", hex(r, 32)),
        contexts: &["FLW_SECRET_KEY={S}", "const flw = new Flutterwave(process.env.FLW_PUBLIC_KEY, '{S}');"],
    },
    Family {
        id: "shippo-live-token",
        make: |r| format!("shippo_live_{}", hex(r, 40)),
        contexts: &[
            "SHIPPO_API_KEY={S}",
            "curl https://api.goshippo.com/shipments/ -H \"Authorization: ShippoToken {S}\"",
        ],
    },
    Family {
        id: "scalingo-api-token",
        make: |r| format!("tk-us-{}", r.chars(B64URL, 48)),
        contexts: &["SCALINGO_API_TOKEN={S}", "scalingo login --api-token {S}"],
    },
    Family {
        id: "cloudflare-origin-ca-key",
        make: |r| format!("v1.0-{}-{}", hex(r, 24), hex(r, 146)),
        contexts: &["CF_API_KEY={S}", "origin ca key used by cert-manager: {S}"],
    },
    Family {
        id: "xai-api-key",
        make: |r| format!("xai-{}", r.chars(B62, 80)),
        contexts: &["XAI_API_KEY={S}", "client = Client(api_key=\"{S}\")"],
    },
    Family {
        id: "clojars-deploy-token",
        make: |r| format!("CLOJARS_{}", r.chars(LOWER_NUM, 60)),
        contexts: &[
            "LEIN_PASSWORD={S}",
            "{:deploy-repositories [[\"clojars\" {:username \"acme\" :password \"{S}\"}]]}",
        ],
    },
    Family {
        id: "brevo-api-key",
        make: |r| format!("xkeysib-{}-{}", hex(r, 64), r.chars(B62, 16)),
        contexts: &["BREVO_API_KEY={S}", "curl -H 'api-key: {S}' https://api.brevo.com/v3/account"],
    },
    Family {
        id: "prefect-api-key",
        make: |r| format!("pnu_{}", r.chars(B62, 36)),
        contexts: &["prefect cloud login -k {S}", "PREFECT_API_KEY={S}"],
    },
    Family {
        id: "readme-api-key",
        make: |r| format!("rdme_{}", r.chars(LOWER_NUM, 70)),
        contexts: &["README_API_KEY={S}", "rdme openapi ./openapi.json --key={S}"],
    },
    Family { id: "putty-private-key", make: putty_private_key, contexts: &["{S}\n", "Attached deploy.ppk:\n\n{S}\n"] },
    Family {
        id: "teams-incoming-webhook",
        make: |r| format!("{}@{}/IncomingWebhook/{}/{}", uuid(r), uuid(r), hex(r, 32), uuid(r)),
        contexts: &[
            "TEAMS_WEBHOOK=https://acme.webhook.office.com/webhookb2/{S}",
            "curl -H 'Content-Type: application/json' -d @msg.json https://acme.webhook.office.com/webhookb2/{S}",
        ],
    },
    Family {
        id: "gitlab-feed-token",
        make: |r| gitlab("glft-", r, 20),
        contexts: &["https://gitlab.acme.dev/dashboard/projects.atom?feed_token={S}", "feed token {S}"],
    },
    Family {
        id: "gitlab-oauth-app-secret",
        make: |r| gitlab("gloas-", r, 64),
        contexts: &["GITLAB_OAUTH_SECRET={S}", "gitlab_rails['omniauth_providers'] = [{ app_secret: '{S}' }]"],
    },
    Family {
        id: "gitlab-agent-token",
        make: |r| gitlab("glagent-", r, 50),
        contexts: &["helm upgrade --install acme gitlab/gitlab-agent --set config.token={S}", "agent token: {S}"],
    },
    Family {
        id: "gitlab-scim-token",
        make: |r| gitlab("glsoat-", r, 20),
        contexts: &["SCIM token for the IdP: {S}", "GITLAB_SCIM_TOKEN={S}"],
    },
    Family {
        id: "gitlab-incoming-mail-token",
        make: |r| gitlab("glimt-", r, 25),
        contexts: &["reply+{S}@gitlab.acme.dev", "incoming mail token {S}"],
    },
    Family {
        id: "gitlab-feature-flag-token",
        make: |r| gitlab("glffct-", r, 20),
        contexts: &["UNLEASH_INSTANCE_ID={S}", "unleash: { instanceId: '{S}' }"],
    },
    Family {
        id: "gitlab-ci-job-token",
        make: |r| format!("glcbt-{}_{}", r.chars(B62, 2), gitlab("", r, 20)),
        contexts: &[
            "curl --header \"JOB-TOKEN: {S}\" https://gitlab.acme.dev/api/v4/jobs/1/artifacts",
            "CI_JOB_TOKEN={S}",
        ],
    },
    Family {
        id: "slack-config-access-token",
        make: |r| format!("xoxe.xoxp-1-{}", r.chars(B62, 164)),
        contexts: &["SLACK_CONFIG_TOKEN={S}", "slack manifest token: {S}"],
    },
    Family {
        id: "openrouter-api-key",
        make: |r| format!("sk-or-v1-{}", hex(r, 64)),
        contexts: &[
            "OPENROUTER_API_KEY={S}",
            "client = OpenAI(base_url=\"https://openrouter.ai/api/v1\", api_key=\"{S}\")",
        ],
    },
    Family {
        id: "deepseek-api-key",
        make: |r| format!("sk-{}", hex(r, 32)),
        contexts: &[
            "DEEPSEEK_API_KEY={S}",
            "curl https://api.deepseek.com/chat/completions -H \"Authorization: Bearer {S}\"",
        ],
    },
    Family {
        id: "paystack-secret-key",
        make: |r| format!("sk_live_{}", hex(r, 40)),
        contexts: &["PAYSTACK_SECRET_KEY={S}", "const paystack = require('paystack')('{S}');"],
    },
    Family {
        id: "clerk-secret-key",
        make: |r| format!("sk_live_{}", r.chars(B62, 40)),
        contexts: &["CLERK_SECRET_KEY={S}", "clerk key for prod: {S}"],
    },
    // Private keys in other armours, and their members.
    Family {
        id: "gcp-service-account-key-id",
        make: |r| hex(r, 40),
        contexts: &[
            "{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-prod\",\n  \"private_key_id\": \"{S}\",\n  \"client_email\": \"ci@acme-prod.iam.gserviceaccount.com\"\n}\n",
            "private_key_id: {S}",
        ],
    },
    Family {
        id: "gcp-service-account-private-key-json",
        make: pkcs8_private_key,
        contexts: &["{\"type\": \"service_account\", \"project_id\": \"acme-prod\", \"private_key\": \"{SJ}\"}"],
    },
    Family {
        id: "jwk-rsa-private-exponent",
        make: |r| jwk_member(r, 256),
        contexts: &[
            "{\"kty\":\"RSA\",\"kid\":\"2024-06\",\"n\":\"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw\",\"e\":\"AQAB\",\"d\":\"{S}\"}",
            "keys:\n  - kty: RSA\n    kid: signer-1\n    e: AQAB\n    d: '{S}'\n",
        ],
    },
    Family {
        id: "jwk-ec-private-key",
        make: |r| jwk_member(r, 32),
        contexts: &[
            "{\n  \"kty\": \"EC\",\n  \"crv\": \"P-256\",\n  \"x\": \"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\",\n  \"y\": \"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\",\n  \"d\": \"{S}\"\n}\n",
        ],
    },
    Family {
        id: "jwk-symmetric-key",
        make: |r| jwk_member(r, 32),
        contexts: &["{\"keys\":[{\"kty\":\"oct\",\"alg\":\"HS256\",\"kid\":\"hmac-1\",\"k\":\"{S}\"}]}"],
    },
    Family {
        id: "ssh2-private-key",
        make: ssh2_private_key,
        contexts: &["{S}\n", "The old Tectia key, for the record:\n{S}\n"],
    },
    Family {
        id: "openvpn-static-key",
        make: openvpn_static_key,
        contexts: &[
            "#\n# made with --genkey --secret ta.key\n#\n{S}\n",
            "<tls-auth>\n{S}\n</tls-auth>\nkey-direction 1\n",
        ],
    },
    Family { id: "pem-dsa-private-key", make: dsa_private_key, contexts: &["{S}\n", "ssh_host_dsa_key:\n{S}\n"] },
    Family {
        id: "pem-encrypted-private-key",
        make: encrypted_private_key,
        contexts: &["{S}\n", "tls:\n  key: |\n    {S}\n"],
    },
    // Passwords given to SQL, PowerShell, servers and commands.
    Family {
        id: "sql-create-user-password",
        make: typed_password,
        contexts: &[
            "CREATE USER app WITH PASSWORD '{S}';",
            "ALTER ROLE reporting WITH LOGIN PASSWORD '{S}' VALID UNTIL '2026-01-01';",
        ],
    },
    Family {
        id: "sql-identified-by",
        make: typed_password,
        contexts: &[
            "CREATE USER 'app'@'%' IDENTIFIED BY '{S}';",
            "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{S}';",
            "CREATE USER scott IDENTIFIED BY {S} DEFAULT TABLESPACE users;",
        ],
    },
    Family {
        id: "mssql-create-login",
        make: typed_password,
        contexts: &["CREATE LOGIN etl WITH PASSWORD = '{S}', CHECK_POLICY = OFF;"],
    },
    Family {
        id: "powershell-securestring",
        make: typed_password,
        contexts: &[
            "$pw = ConvertTo-SecureString \"{S}\" -AsPlainText -Force",
            "$cred = New-Object PSCredential('svc-deploy', (ConvertTo-SecureString -String '{S}' -AsPlainText -Force))",
        ],
    },
    Family {
        id: "redis-requirepass",
        make: typed_password,
        contexts: &["bind 0.0.0.0\nport 6379\nrequirepass {S}\n", "masterauth \"{S}\"\nreplicaof 10.0.0.4 6379\n"],
    },
    Family {
        id: "ldap-bind-password",
        make: typed_password,
        contexts: &[
            "uri ldap://ldap.acme.dev\nbinddn cn=nslcd,dc=acme,dc=dev\nbindpw {S}\n",
            "rootdn \"cn=admin,dc=acme,dc=dev\"\nrootpw {S}\n",
        ],
    },
    Family {
        id: "keytool-store-password",
        make: typed_password,
        contexts: &[
            "keytool -importcert -alias ca -file ca.pem -keystore truststore.jks -storepass {S} -noprompt",
            "keytool -genkeypair -alias app -keystore app.p12 -storetype PKCS12 -keypass {S}",
        ],
    },
    Family {
        id: "openssl-pass-argument",
        make: typed_password,
        contexts: &[
            "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{S}",
            "openssl rsa -in enc.key -out plain.key -passin pass:{S}",
        ],
    },
    Family {
        id: "makefile-password",
        make: typed_password,
        contexts: &["DB_PASSWORD ?= {S}\nmigrate:\n\tpsql -c 'select 1'\n"],
    },
    Family {
        id: "flask-secret-key",
        make: |r| r.chars(B64URL, 43),
        contexts: &["app.config['SECRET_KEY'] = '{S}'", "app.config[\"SECRET_KEY\"] = \"{S}\""],
    },
    Family {
        id: "ldapsearch-bind-password",
        make: typed_password,
        contexts: &["ldapsearch -x -H ldaps://ldap.acme.dev -D 'cn=admin,dc=acme,dc=dev' -w {S} '(uid=dana)'"],
    },
    Family {
        id: "sqlcmd-password",
        make: typed_password,
        contexts: &["sqlcmd -S db.acme.dev -U sa -P {S} -Q \"SELECT @@VERSION\""],
    },
    Family {
        id: "smbclient-user-password",
        make: typed_password,
        contexts: &["smbclient //files.acme.dev/finance -U alice%{S} -c 'ls'"],
    },
    Family {
        id: "sqlplus-connect-password",
        make: url_safe_password,
        contexts: &["sqlplus scott/{S}@//db.acme.dev:1521/ORCLPDB1 @report.sql"],
    },
    Family {
        id: "net-use-password",
        make: typed_password,
        contexts: &["net use Z: \\\\files01\\share {S} /user:ACME\\svc-backup /persistent:no"],
    },
    Family {
        id: "psexec-password",
        make: typed_password,
        contexts: &["psexec \\\\web01 -u ACME\\admin -p {S} cmd /c ipconfig"],
    },
    Family {
        id: "session-cookie-header",
        make: |r| r.chars(LOWER_NUM, 32),
        contexts: &[
            "Cookie: csrftoken=x1; sessionid={S}",
            "Set-Cookie: laravel_session={S}; path=/; httponly; samesite=lax",
        ],
    },
    Family {
        id: "ansible-become-password",
        make: typed_password,
        contexts: &[
            "all:\n  vars:\n    ansible_become_password: {S}\n",
            "ansible-playbook site.yml -e ansible_become_pass={S}",
        ],
    },
    Family {
        id: "wpa-supplicant-psk",
        make: typed_password,
        contexts: &["network={\n    ssid=\"acme-office\"\n    psk=\"{S}\"\n}\n"],
    },
    Family {
        id: "gpg-passphrase-flag",
        make: typed_password,
        contexts: &["gpg --batch --yes --pinentry-mode loopback --passphrase {S} -d backup.tar.gpg"],
    },
    Family {
        id: "rclone-config-pass",
        make: |r| r.chars(B64URL, 48),
        contexts: &["[nas]\ntype = sftp\nhost = nas.acme.dev\nuser = backup\npass = {S}\n"],
    },
    Family {
        id: "rabbitmq-default-pass",
        make: typed_password,
        contexts: &["default_user = admin\ndefault_pass = {S}\n"],
    },
    Family {
        id: "muttrc-smtp-pass",
        make: typed_password,
        contexts: &["set smtp_url = \"smtps://dana@mail.acme.dev\"\nset smtp_pass = \"{S}\"\n"],
    },
    Family {
        id: "msmtprc-password",
        make: typed_password,
        contexts: &["account acme\nhost mail.acme.dev\nuser dana\npassword {S}\n"],
    },
    Family {
        id: "fetchmailrc-password",
        make: typed_password,
        contexts: &["poll imap.acme.dev protocol IMAP user 'dana' password '{S}' ssl"],
    },
    Family {
        id: "wireguard-preshared-key",
        make: |r| b64(&r.bytes(32)),
        contexts: &[
            "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nPresharedKey = {S}\nAllowedIPs = 10.0.0.2/32\n",
        ],
    },
    Family {
        id: "cloudinary-url",
        make: |r| r.chars(B64URL, 27),
        contexts: &["CLOUDINARY_URL=cloudinary://874837483274837:{S}@acme-media"],
    },
    // Keys of providers without a prefix, named as their documentation names them.
    Family {
        id: "azure-cosmos-db-key",
        make: |r| b64(&r.bytes(64)),
        contexts: &["AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey={S};"],
    },
    Family {
        id: "azure-communication-services-key",
        make: |r| b64(&r.bytes(64)),
        contexts: &["endpoint=https://acme-acs.communication.azure.com/;accesskey={S}"],
    },
    Family {
        id: "azure-apim-subscription-key",
        make: |r| hex(r, 32),
        contexts: &["curl -H 'Ocp-Apim-Subscription-Key: {S}' https://api.acme.dev/orders"],
    },
    Family {
        id: "azure-openai-api-key",
        make: |r| hex(r, 32),
        contexts: &[
            "AZURE_OPENAI_API_KEY={S}",
            "curl https://acme.openai.azure.com/openai/deployments -H \"api-key: {S}\"",
        ],
    },
    Family {
        id: "mistral-api-key",
        make: |r| r.chars(B62, 32),
        contexts: &["MISTRAL_API_KEY={S}", "client = Mistral(api_key=\"{S}\")"],
    },
    Family {
        id: "cohere-api-key",
        make: |r| r.chars(B62, 40),
        contexts: &["CO_API_KEY={S}", "co = cohere.ClientV2(api_key=\"{S}\")"],
    },
    Family { id: "together-api-key", make: |r| hex(r, 64), contexts: &["TOGETHER_API_KEY={S}"] },
    Family {
        id: "linode-personal-token",
        make: |r| hex(r, 64),
        contexts: &["LINODE_TOKEN={S}", "linode-cli configure --token {S}"],
    },
    Family {
        id: "hetzner-cloud-token",
        make: |r| r.chars(B62, 64),
        contexts: &["HCLOUD_TOKEN={S}", "provider \"hcloud\" {\n  token = \"{S}\"\n}\n"],
    },
    Family { id: "vultr-api-key", make: |r| r.chars(UPPER_NUM, 36), contexts: &["VULTR_API_KEY={S}"] },
    Family {
        id: "ovh-application-secret",
        make: |r| r.chars(B62, 32),
        contexts: &["[ovh-eu]\napplication_key=wK6iY2N6ePZ4lzAe\napplication_secret={S}\n"],
    },
    Family {
        id: "auth0-client-secret",
        make: |r| r.chars(B64URL, 64),
        contexts: &["AUTH0_CLIENT_SECRET={S}", "auth0:\n  domain: acme.eu.auth0.com\n  clientSecret: {S}\n"],
    },
    Family {
        id: "algolia-admin-api-key",
        make: |r| hex(r, 32),
        contexts: &["ALGOLIA_ADMIN_API_KEY={S}", "algolia:\n  application_id: XK29DLQ0PZ\n  admin_api_key: {S}\n"],
    },
    Family {
        id: "rollbar-access-token",
        make: |r| hex(r, 32),
        contexts: &["ROLLBAR_ACCESS_TOKEN={S}", "Rollbar.configure { |c| c.access_token = '{S}' }"],
    },
    Family {
        id: "pagerduty-api-key",
        make: |r| format!("u+{}", r.chars(B62, 18)),
        contexts: &[
            "PAGERDUTY_API_KEY={S}",
            "curl -H 'Authorization: Token token={S}' https://api.pagerduty.com/users",
        ],
    },
    Family {
        id: "datadog-application-key",
        make: |r| hex(r, 40),
        contexts: &["DD_APP_KEY={S}", "curl -H \"DD-APPLICATION-KEY: {S}\" https://api.datadoghq.eu/api/v1/dashboard"],
    },
    Family {
        id: "jenkins-api-token",
        make: |r| format!("11{}", hex(r, 32)),
        contexts: &["JENKINS_API_TOKEN={S}", "curl -u ci-bot:{S} https://jenkins.acme.dev/job/api/build"],
    },
    Family {
        id: "snyk-api-token",
        make: uuid,
        contexts: &["SNYK_TOKEN={S}", "      - name: Run Snyk\n        env:\n          SNYK_TOKEN: {S}\n"],
    },
    Family {
        id: "codecov-upload-token",
        make: uuid,
        contexts: &[
            "CODECOV_TOKEN={S}",
            "      - uses: codecov/codecov-action@v4\n        with:\n          token: {S}\n",
        ],
    },
    Family {
        id: "gradle-publish-secret",
        make: |r| r.chars(B62, 32),
        contexts: &["gradle.publish.key=wK6iY2N6ePZ4lzAeXk29dLq0\ngradle.publish.secret={S}\n"],
    },
    Family {
        id: "rails-master-key",
        make: |r| hex(r, 32),
        contexts: &["RAILS_MASTER_KEY={S}", "docker run -e RAILS_MASTER_KEY={S} acme/web"],
    },
    Family {
        id: "nextauth-secret",
        make: |r| b64(&r.bytes(32)),
        contexts: &["NEXTAUTH_SECRET={S}", "AUTH_SECRET=\"{S}\""],
    },
    Family { id: "symfony-app-secret", make: |r| hex(r, 32), contexts: &["APP_ENV=prod\nAPP_SECRET={S}\n"] },
    Family {
        id: "ngrok-authtoken",
        make: |r| format!("2{}_{}", r.chars(B62, 26), r.chars(B62, 21)),
        contexts: &["version: \"2\"\nauthtoken: {S}\n", "NGROK_AUTHTOKEN={S}"],
    },
    // Passwords told in sentences.
    Family {
        id: "password-in-english-prose",
        make: typed_password,
        contexts: &[
            "The password for the staging database is {S} until we move it to Vault.",
            "fyi the wifi password is {S}",
            "Log in as admin with password {S} and change it at once.",
            "Reset the root password to {S} on all three hosts.",
        ],
    },
    Family {
        id: "password-in-german-prose",
        make: |r| told_password(r, &["Sommer", "Wintergarten", "Bergblick", "Hafen"]),
        contexts: &["Das Passwort für den Build-Server lautet {S}.", "Kennwort: {S} (bitte nicht weitergeben)"],
    },
    Family {
        id: "password-in-french-prose",
        make: |r| told_password(r, &["Soleil", "Montagne", "Bonjour", "Lavande"]),
        contexts: &["Le mot de passe de la base est {S}, à changer lundi.", "mot de passe : « {S} »"],
    },
    Family {
        id: "password-in-spanish-prose",
        make: |r| told_password(r, &["Verano", "Montana", "Girasol", "Playa"]),
        contexts: &["La contraseña del servidor es {S}", "contraseña: {S}"],
    },
    Family {
        id: "password-in-portuguese-prose",
        make: |r| told_password(r, &["Saudade", "Laranja", "Brasil", "Mar"]),
        contexts: &["A senha do banco de dados é {S}", "senha: {S}"],
    },
    Family {
        id: "password-in-italian-prose",
        make: |r| told_password(r, &["Roma", "Gelato", "Estate", "Vesuvio"]),
        contexts: &["La password dell'admin è {S}, cambiala dopo il primo accesso."],
    },
    Family {
        id: "password-in-dutch-prose",
        make: |r| told_password(r, &["Tulpen", "Fiets", "Gracht", "Zomer"]),
        contexts: &["Het wachtwoord van de NAS is {S}", "wachtwoord: {S}"],
    },
    Family {
        id: "password-in-japanese-prose",
        make: |r| told_password(r, &["Sakura", "Fuji", "Natsu", "Tanuki"]),
        contexts: &["本番DBのパスワードは「{S}」です。", "パスワード：{S}", "管理画面のパスワードは{S}です"],
    },
    Family {
        id: "password-in-chinese-prose",
        make: |r| told_password(r, &["Beijing", "Panda", "Longjing", "Huangshan"]),
        contexts: &["管理员密码是 {S}，请勿外传。", "数据库密码：{S}", "VPN 密碼為 {S}"],
    },
    Family {
        id: "password-in-korean-prose",
        make: |r| told_password(r, &["Seoul", "Kimchi", "Hangang", "Busan"]),
        contexts: &["서버 비밀번호는 {S} 입니다.", "비밀번호: {S}"],
    },
    Family {
        id: "password-in-russian-prose",
        make: |r| told_password(r, &["Moskva", "Zima", "Volga", "Baikal"]),
        contexts: &["Пароль от базы данных — {S}", "пароль: {S}", "Пароль для входа: {S}, не забудьте сменить."],
    },
    Family {
        id: "password-in-polish-prose",
        make: |r| told_password(r, &["Krakow", "Wisla", "Pierogi", "Tatry"]),
        contexts: &["Hasło do serwera to {S}", "hasło: {S}"],
    },
    Family {
        id: "password-in-turkish-prose",
        make: |r| told_password(r, &["Istanbul", "Bogaz", "Simit", "Kapadokya"]),
        contexts: &["Sunucu şifresi: {S}", "wifi şifre {S}"],
    },
    Family {
        id: "password-in-swedish-prose",
        make: |r| told_password(r, &["Midsommar", "Fika", "Skargard", "Alg"]),
        contexts: &["Lösenordet till routern är {S}", "lösenord: {S}"],
    },
    // Secrets in the forms a text takes on its way to a log.
    Family {
        id: "json-escaped-url-credentials",
        make: url_safe_password,
        contexts: &[
            "{\"db\":\"postgres:\\/\\/app:{S}@db.internal:5432\\/orders\"}",
            "{\"broker\":\"amqps:\\/\\/svc:{S}@mq.acme.dev\\/vhost\"}",
        ],
    },
    Family {
        id: "double-encoded-json-password",
        make: typed_password,
        contexts: &[
            "{\"body\":\"{\\\"password\\\":\\\"{S}\\\",\\\"user\\\":\\\"app\\\"}\"}",
            "{\"event\":\"{\\\"config\\\":\\\"{\\\\\\\"db_password\\\\\\\":\\\\\\\"{S}\\\\\\\"}\\\"}\"}",
        ],
    },
    Family {
        id: "unicode-escaped-json-secret",
        make: typed_password,
        contexts: &["{\"env\":\"DB_PASSWORD\\u003d{S}\"}", "{\"line\":\"password\\u003a {S}\"}"],
    },
    Family {
        id: "shell-continuation-split-token",
        make: |r| {
            let token =
                format!("glpat-{}", r.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 20));
            continued(token, 12)
        },
        contexts: &[
            "docker build --build-arg GL_TOKEN={S} .",
            "curl -H \"PRIVATE-TOKEN: {S}\" https://gitlab.acme.dev/api/v4/user",
        ],
    },
    Family {
        id: "terminal-wrapped-token",
        make: |r| {
            let token = format!("sk-ant-api03-{}", r.chars(B64URL, 93));
            format!("{}\n{}", &token[..60], &token[60..])
        },
        contexts: &["$ cat .env\nANTHROPIC_API_KEY={S}\n$ ", "pasted: {S}\n"],
    },
];

pub(super) const LOOK_ALIKES: &[Family] = &[
    Family {
        id: "documented-provider-examples",
        make: |_| String::new(),
        contexts: &[
            "export TENCENTCLOUD_SECRET_ID=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
            "HUBSPOT_ACCESS_TOKEN=pat-na1-00000000-0000-0000-0000-000000000000",
            "SRC_ACCESS_TOKEN=sgp_<your-token>",
            "BUILDKITE_API_TOKEN=bkua_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "HEROKU_API_KEY=HRKU-AA<your-key-here>",
            "contentful login --management-token CFPAT-YOUR_TOKEN_HERE",
            "LANGSMITH_API_KEY=lsv2_pt_...",
            "PINECONE_API_KEY=pcsk_XXXXX_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "Set `CARGO_REGISTRY_TOKEN` to the token that `cargo login` prints (it starts with `cio`).",
            "RESEND_API_KEY=re_xxxxxxxxx",
        ],
    },
    Family {
        id: "identifiers-that-start-like-tokens",
        make: |_| String::new(),
        contexts: &[
            "static int re_compile_pattern_cache(struct re_state *st);",
            "void cs_handle_incoming_request_frame(struct cs_conn *c);",
            "skb = sk_buff_head_init_list(&queue->sk_buff_head_list);",
            "async def aio_read_completion_handler(self, fut):",
            "import ico-file-converter-plugin from './plugins';",
            "See path/to/the/config/file.yaml and pat_matching_rules_v2.",
            "The st.louis-datacenter-02 rack moved to st.paul-datacenter-01.",
            "Use api_org_settings_controller for the org settings page.",
            "pk_live_51HxQ2kLmN8pQr4sT6vW8yZ0aPublishableKeyForCheckout",
        ],
    },
    Family {
        id: "hashes-and-ids-near-secret-words",
        make: |r| hex(r, 64),
        contexts: &[
            "The password hash is stored as sha256:{S} in the audit log.",
            "session digest {S}",
            "sonar scan {S} finished",
        ],
    },
    Family {
        id: "bcrypt-hash-in-prose",
        make: |r| format!("$2b$12${}", r.chars("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 53)),
        contexts: &["The password hash is {S}; never log it.", "password_hash: {S}"],
    },
    Family {
        id: "uuids-near-secret-words",
        make: uuid,
        contexts: &[
            "Session {S} expired after 30 minutes.",
            "Plaid item_id {S} was re-linked.",
            "X-Request-Id: {S}",
            "cookie consent id {S}",
        ],
    },
    Family {
        id: "public-keys-in-other-armours",
        make: |r| armored(r, &[0, 0, 0, 7, b's', b's', b'h', b'-', b'r', b's', b'a'], 270, 70),
        contexts: &[
            "---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"2048-bit rsa, deploy@build-01\"\n{S}\n---- END SSH2 PUBLIC KEY ----\n",
        ],
    },
    Family {
        id: "jwk-public-keys",
        make: |r| b64url(&r.bytes(32)),
        contexts: &[
            "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"{S}\",\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\",\"use\":\"sig\",\"kid\":\"1\"}",
            "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"{S}\",\"kid\":\"signer\"}",
        ],
    },
    Family {
        id: "key-templates",
        make: |_| String::new(),
        contexts: &[
            "-----BEGIN OpenVPN Static key V1-----\n<paste the key here>\n-----END OpenVPN Static key V1-----\n",
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n...\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
            "tls-auth ta.key 1\nkey-direction 1\n",
        ],
    },
    Family {
        id: "sql-without-a-password",
        make: |_| String::new(),
        contexts: &[
            "CREATE USER app IDENTIFIED EXTERNALLY;",
            "ALTER USER app IDENTIFIED BY :new_password;",
            "-- The password is set by the migration runner, never here.",
            "Rows are identified by their primary key and the tenant id.",
            "CREATE USER report WITH PASSWORD NULL;",
        ],
    },
    Family {
        id: "commands-that-prompt-for-a-password",
        make: |_| String::new(),
        contexts: &[
            "ldapsearch -x -W -D 'cn=admin,dc=acme,dc=dev' '(uid=dana)'",
            "smbclient //files.acme.dev/finance -U alice",
            "sqlplus / as sysdba",
            "net use Z: \\\\files01\\share * /user:ACME\\svc-backup",
            "keytool -list -keystore cacerts -storepass changeit",
            "$pw = ConvertTo-SecureString $env:DB_PASSWORD -AsPlainText -Force",
            "$pw = Read-Host -AsSecureString 'Password'",
            "openssl rsa -in enc.key -out plain.key -passin env:KEY_PASS",
            "# requirepass foobared",
            "DB_PASSWORD ?= $(shell pass show acme/db)",
            "psexec \\\\web01 -u ACME\\admin cmd /c ipconfig",
        ],
    },
    Family {
        id: "cookies-without-a-session",
        make: |_| String::new(),
        contexts: &[
            "Cookie: theme=dark; lang=en-GB; tz=Europe/Berlin",
            "Set-Cookie: sessionid=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/",
        ],
    },
    Family {
        id: "urls-without-secrets",
        make: |_| String::new(),
        contexts: &[
            "curl \"https://orders-api.azurewebsites.net/api/health?name=probe\"",
            "{\"docs\":\"https:\\/\\/docs.acme.dev\\/auth\\/tokens\"}",
            "{\"db\":\"postgres:\\/\\/db.internal:5432\\/orders\"}",
            "Release notes: https://acme.dev/v4.public.release-notes-for-the-2024-edition",
        ],
    },
    Family {
        id: "escaped-text-without-secrets",
        make: |_| String::new(),
        contexts: &[
            "{\"body\":\"{\\\"user\\\":\\\"app\\\",\\\"password\\\":\\\"\\\"}\"}",
            "printf(\"password:\\t%s\\n\", masked);",
            "{\"msg\":\"Passw\\u00f6rter sind Pflicht\"}",
            "C:\\Users\\dana\\AppData\\Local\\Temp\\token-cache.json",
            "echo \"tokens are rotated nightly\" \\\n  | tee -a /var/log/rotate.log",
            "Docs: https://github.com/acme/sk-ant-sdk-python/blob/main/README.md\nInstall it with pip.\n",
        ],
    },
    Family {
        id: "padding-and-runs",
        make: |_| String::new(),
        contexts: &[
            "zeros: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
            "cmVmdXNlZCB0byBzdGFydA== is base64 for \"refused to start\".",
        ],
    },
    Family {
        id: "prose-naming-a-password-in-english",
        make: |_| String::new(),
        contexts: &[
            "The password is required and must be at least 12 characters long.",
            "The password is hashed with argon2id before it is stored.",
            "The password is sha256-hashed on the client.",
            "Passwords are stored in Vault; see docs/secrets.md.",
            "The password is 12-characters minimum.",
            "Reset the password: run `tmws auth reset` and follow the prompts.",
            "The password is $DB_PASSWORD, read from the environment.",
            "The default password is 'changeme'; change it on first login.",
            "password policy: SHA-256 with salt",
            "The password is AES-256 encrypted at rest.",
            "the password is in config.yaml",
            "Password reset emails go to ops@example.com.",
            "If the password is wrong three times, the account is locked for 15 minutes.",
            "Use a passphrase of at least four words.",
            "The passcode is sent by SMS to the registered number.",
            "WITH PASSWORD clauses are rejected by the linter.",
            "Forgot your password? Click the link we sent to your email.",
            "The password field accepts up to 128 characters, including emoji.",
            "Password managers like 1Password and Bitwarden store it for you.",
            "Set PGPASSWORD in the environment instead of passing it on the command line.",
            "Passwords must not match any of the last 4 (PCI DSS 8.3.7).",
            "The password expires every 90 days.",
            "password: ******** (hidden)",
            "The password is case-sensitive.",
            "The password is in 1Password under 'Prod DB'.",
            "Your password was changed on 2024-05-14 at 10:02 UTC.",
            "password reset token TTL: 15m",
            "Use `--password-stdin` to read the password from standard input.",
            "If the password is `null`, the driver falls back to IAM auth.",
            "Password: see the vault entry ops/prod-db.",
            "| password | string | The database user's password. |",
            "`password` (string, required): the user's password.",
            "passwordless login with WebAuthn and passkeys",
            "PASSWORD_MIN_LENGTH=12",
            "password_hash = bcrypt.hashpw(pw, bcrypt.gensalt(12))",
            "db.password = config.get('db.password')",
            "ALTER USER app PASSWORD EXPIRE;",
        ],
    },
    Family {
        id: "prose-naming-a-password-in-other-languages",
        make: |_| String::new(),
        contexts: &[
            "Das Passwort ist mindestens zwölf Zeichen lang.",
            "Das Kennwort lautet wie im Tresor hinterlegt.",
            "Le mot de passe est stocké dans le coffre.",
            "Le mot de passe : voir le gestionnaire de l'équipe.",
            "La contraseña es obligatoria.",
            "La contraseña debe tener al menos 12 caracteres.",
            "A senha é obrigatória.",
            "La password è obbligatoria e deve contenere un numero.",
            "Het wachtwoord is verplicht.",
            "パスワードは8文字以上にしてください。",
            "パスワードは必須です。",
            "密码是必填项。",
            "密码长度至少为 12 位。",
            "비밀번호는 필수입니다.",
            "비밀번호는 8자 이상이어야 합니다.",
            "암호화된 파일은 안전합니다.",
            "Пароль — обязательное поле.",
            "Пароль должен содержать не менее 12 символов.",
            "Hasło jest wymagane.",
            "Şifre en az 8 karakter olmalıdır.",
            "Lösenordet måste vara minst tolv tecken.",
            "Bitte das Passwort nicht per E-Mail versenden.",
            "Passwort vergessen? Hier zurücksetzen.",
            "Mot de passe oublié ? Cliquez ici.",
            "¿Olvidaste tu contraseña? Restablécela aquí.",
            "Esqueceu a senha? Clique aqui.",
            "パスワードをお忘れの方はこちら",
            "パスワードは管理者に確認してください。",
            "忘记密码？请联系管理员。",
            "请输入密码：",
            "비밀번호를 잊으셨나요?",
            "Забыли пароль? Нажмите сюда.",
            "Пароль: см. менеджер паролей.",
            "Şifremi unuttum, yardım edin.",
        ],
    },
    Family {
        id: "server-and-tool-settings-without-a-password",
        make: |_| String::new(),
        contexts: &[
            "requirepass \"\"",
            "rootpw {SSHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
            "$pw = ConvertTo-SecureString \"$env:DB_PASSWORD\" -AsPlainText -Force",
            "CREATE USER legacy IDENTIFIED BY VALUES 'S:8F2D65FB5547B71C8DA3760F10960428CD307B1C6271691FC55C1F56554A';",
            "keytool -list -keystore app.jks -storepass:env STOREPASS",
            "openssl enc -aes-256-cbc -pass pass:$BACKUP_PASS -in db.sql -out db.sql.enc",
            "openssl rsa -in enc.key -passin stdin",
            "Cookie: session=; Max-Age=0",
            "Set-Cookie: sessionid=deleted; expires=Thu, 01 Jan 1970 00:00:00 GMT",
            "Cookie: _ga=GA1.2.1234567890.1699999999; _gid=GA1.2.987654321.1700000000",
            "curl -u \"$USER:$PASS\" https://nexus.acme.dev/service/rest/v1/status",
            "{\"password\":\"\\u002a\\u002a\\u002a\\u002a\\u002a\\u002a\"}",
        ],
    },
    Family {
        id: "token-shapes-in-documentation",
        make: |_| String::new(),
        contexts: &[
            "Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request",
            "OpenShift tokens start with sha256~ followed by 43 characters.",
            "For symmetric keys (kty \"oct\"), the key value is in the k member.",
            "ATTACHMENT_MAX_SIZE_BYTES=10485760",
            "SCW_ACCESS_KEY=SCWXXXXXXXXXXXXXXXXX",
            "PASERK public key: k4.public.cHFyc3R1dnd4eXp7fH1-f4CBgoOEhYaHiImKi4yNjo8",
            "HF_ORG_TOKEN_PREFIX = \"api_org_\"",
            "API-KEY-ROTATION-SCHEDULE is documented in ops/rotation.md",
            "cmVmdW5kX3JlcXVlc3RfaWQ9MTIzNDU2Nzg5MA is the encoded refund id.",
        ],
    },
    Family {
        id: "digests-that-start-like-tokens",
        make: |r| format!("4b1d{}", hex(r, 36)),
        contexts: &["commit {S}\nAuthor: Dana <dana@acme.dev>\n"],
    },
    Family {
        id: "image-digests-that-start-like-tokens",
        make: |r| format!("4b1d{}", hex(r, 60)),
        contexts: &["image: registry.acme.dev/api@sha256:{S}", "layer {S} pulled in 3.2s"],
    },
    Family {
        id: "jwks-rsa-public-keys",
        make: |r| jwk_member(r, 256),
        contexts: &[
            "{\"keys\":[{\"kty\":\"RSA\",\"use\":\"sig\",\"kid\":\"2024-06\",\"alg\":\"RS256\",\"n\":\"{S}\",\"e\":\"AQAB\"}]}",
        ],
    },
];
