//! Unfinished multipart uploads on S3. `object_store` starts, completes and aborts an upload
//! but cannot list the ones nobody finished (a push killed mid-upload leaves its parts, which
//! the bucket stores, and bills, until someone aborts them), so `remote gc` lists and aborts
//! them with requests of its own: ListMultipartUploads (`GET ?uploads`, page by page, only
//! under the remote's prefix) and AbortMultipartUpload (`DELETE KEY?uploadId=ID`), signed with
//! the store's own credentials by `object_store`'s SigV4 signer and sent with `reqwest`.
//!
//! Not every S3-compatible server implements the listing (s3rver does not): an error status
//! that says so, or an answer that is not a listing, is [`Unfinished::Unsupported`], which
//! `gc` reports once rather than failing.

use std::sync::OnceLock;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{HttpRequest, HttpRequestBody};
use reqwest::{Method, StatusCode};
use serde::Deserialize;

use super::limits::{CONNECT, SMALL, STALL};

/// One upload that was started and neither completed nor aborted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Upload {
    /// The object's key in the bucket (the remote's prefix included).
    pub key: String,
    /// The upload's id.
    pub id: String,
    /// When it was started, in seconds since the epoch.
    pub initiated: i64,
}

/// What the listing found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unfinished {
    /// Every unfinished upload under the remote's prefix.
    Listed(Vec<Upload>),
    /// The server does not list them; why, in words.
    Unsupported(String),
}

/// How to reach the bucket for the two requests `object_store` does not make.
pub(crate) struct S3Uploads {
    credentials: AwsCredentialProvider,
    /// The bucket's URL, without a trailing `/` (`http://host:port/bucket` path-style,
    /// `https://bucket.s3.REGION.amazonaws.com` virtual-hosted), as `object_store` builds it.
    bucket_url: String,
    region: String,
    /// The remote's prefix in the bucket with a trailing `/`, or empty.
    prefix: String,
    http: OnceLock<reqwest::Client>,
}

/// The answer to a request: (status, body).
type Answer = (StatusCode, Vec<u8>);

impl S3Uploads {
    /// Reads the bucket's URL and region the way `object_store` does from `builder` (before
    /// it is built); `credentials` are the built store's.
    pub(crate) fn new(
        builder: &AmazonS3Builder,
        credentials: AwsCredentialProvider,
        prefix: &str,
    ) -> S3Uploads {
        let get = |k: AmazonS3ConfigKey| builder.get_config_value(&k);
        let region = get(AmazonS3ConfigKey::Region).unwrap_or_else(|| "us-east-1".into());
        let bucket = get(AmazonS3ConfigKey::Bucket).unwrap_or_default();
        let endpoint = get(AmazonS3ConfigKey::S3Endpoint).or(get(AmazonS3ConfigKey::Endpoint));
        let virtual_hosted =
            get(AmazonS3ConfigKey::VirtualHostedStyleRequest).is_some_and(|v| v == "true");
        let bucket_url = match (endpoint, virtual_hosted) {
            (Some(endpoint), true) => endpoint,
            (Some(endpoint), false) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
            (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
            (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
        };
        S3Uploads {
            credentials,
            bucket_url: bucket_url.trim_end_matches('/').to_string(),
            region,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            http: OnceLock::new(),
        }
    }

    /// Every unfinished upload under the remote's prefix, following the listing's pages.
    pub(crate) async fn list(&self) -> Result<Unfinished, String> {
        let mut out = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut query = format!("uploads=&prefix={}", strict(&self.prefix));
            if let Some((key, id)) = &markers {
                query.push_str(&format!(
                    "&key-marker={}&upload-id-marker={}",
                    strict(key),
                    strict(id)
                ));
            }
            let (status, body) = self
                .send(Method::GET, &format!("{}?{query}", self.bucket_root()))
                .await?;
            let page = match parse_page(status, &body)? {
                Ok(page) => page,
                Err(unsupported) => return Ok(Unfinished::Unsupported(unsupported)),
            };
            out.extend(page.uploads);
            match page.next {
                // A server that says "more" without saying where from, or names the same
                // place again, would loop forever: what came so far is the answer.
                Some(next) if page.truncated && markers.as_ref() != Some(&next) => {
                    markers = Some(next)
                }
                _ => return Ok(Unfinished::Listed(out)),
            }
        }
    }

    /// Aborts `upload` (one already gone is fine).
    pub(crate) async fn abort(&self, upload: &Upload) -> Result<(), String> {
        let path: Vec<String> = upload.key.split('/').map(strict).collect();
        let url = format!(
            "{}/{}?uploadId={}",
            self.bucket_url,
            path.join("/"),
            strict(&upload.id)
        );
        let (status, body) = self.send(Method::DELETE, &url).await?;
        if status.is_success() || status == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(format!("HTTP {status}{}", error_code(&body)))
        }
    }

    /// The bucket's URL as a listing request names it: path-style `http://host/bucket`,
    /// virtual-hosted `https://bucket.s3.REGION.amazonaws.com/`.
    fn bucket_root(&self) -> String {
        let after_scheme = self.bucket_url.split_once("://").map_or("", |(_, r)| r);
        if after_scheme.contains('/') {
            self.bucket_url.clone()
        } else {
            format!("{}/", self.bucket_url)
        }
    }

    /// Sends a signed request with an empty body, answered within [`SMALL`] as every small
    /// request of a remote is.
    async fn send(&self, method: Method, url: &str) -> Result<Answer, String> {
        match tokio::time::timeout(SMALL, self.send_unlimited(method, url)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("timed out: no answer within {} s", SMALL.as_secs())),
        }
    }

    async fn send_unlimited(&self, method: Method, url: &str) -> Result<Answer, String> {
        let credential = self
            .credentials
            .get_credential()
            .await
            .map_err(|e| format!("no credentials: {e}"))?;
        let mut request = HttpRequest::new(HttpRequestBody::empty());
        *request.method_mut() = method.clone();
        *request.uri_mut() = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
        AwsAuthorizer::new(&credential, "s3", &self.region)
            .try_authorize(&mut request, None)
            .map_err(|e| format!("cannot sign the request: {e}"))?;
        let response = self
            .client()?
            .request(method, url)
            .headers(request.headers().clone())
            .send()
            .await
            .map_err(|e| error_chain(&e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| error_chain(&e))?;
        Ok((status, body.to_vec()))
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .read_timeout(STALL)
            .build()
            .map_err(|e| format!("cannot start an HTTP client: {}", error_chain(&e)))?;
        Ok(self.http.get_or_init(|| client))
    }
}

/// One page of a listing: its uploads, whether there is more, and where the next page starts.
#[derive(Debug)]
struct Page {
    uploads: Vec<Upload>,
    truncated: bool,
    next: Option<(String, String)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListMultipartUploadsResult {
    #[serde(default)]
    is_truncated: bool,
    #[serde(default)]
    next_key_marker: Option<String>,
    #[serde(default)]
    next_upload_id_marker: Option<String>,
    #[serde(default, rename = "Upload")]
    uploads: Vec<UploadXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UploadXml {
    key: String,
    upload_id: String,
    initiated: String,
}

/// Statuses with which a server says it has no such operation.
const UNSUPPORTED: [StatusCode; 4] = [
    StatusCode::NOT_IMPLEMENTED,
    StatusCode::NOT_FOUND,
    StatusCode::BAD_REQUEST,
    StatusCode::METHOD_NOT_ALLOWED,
];

/// A listing page; `Ok(Err(why))` when the server does not list uploads; `Err` when it failed.
fn parse_page(status: StatusCode, body: &[u8]) -> Result<Result<Page, String>, String> {
    let text = String::from_utf8_lossy(body);
    if UNSUPPORTED.contains(&status) {
        return Ok(Err(format!(
            "the server does not list them (ListMultipartUploads answered HTTP {status}{})",
            error_code(body)
        )));
    }
    if !status.is_success() {
        return Err(format!("HTTP {status}{}", error_code(body)));
    }
    if !text.contains("<ListMultipartUploadsResult") {
        let root = text
            .split('<')
            .map(|t| t.split([' ', '>', '/']).next().unwrap_or(""))
            .find(|t| !t.is_empty() && !t.starts_with('?'))
            .unwrap_or("an empty body");
        return Ok(Err(format!(
            "the server does not list them (ListMultipartUploads answered with {root}, not a listing)"
        )));
    }
    let parsed: ListMultipartUploadsResult = quick_xml::de::from_str(&text)
        .map_err(|e| format!("cannot read the listing of unfinished uploads: {e}"))?;
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let next = nonempty(parsed.next_key_marker).zip(nonempty(parsed.next_upload_id_marker));
    let uploads = parsed
        .uploads
        .into_iter()
        .filter_map(|u| {
            // An upload whose start cannot be read cannot be shown to be old: it is kept.
            let initiated = chrono::DateTime::parse_from_rfc3339(&u.initiated).ok()?;
            Some(Upload {
                key: u.key,
                id: u.upload_id,
                initiated: initiated.timestamp(),
            })
        })
        .collect();
    Ok(Ok(Page {
        uploads,
        truncated: parsed.is_truncated,
        next,
    }))
}

/// `: CODE` from an S3 error body (`<Error><Code>NotImplemented</Code>...`), or nothing.
fn error_code(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map(|(code, _)| format!(": {code}"))
        .unwrap_or_default()
}

/// Percent-encodes everything but the unreserved characters, as SigV4 canonicalizes (so
/// what is sent is what is signed).
fn strict(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut chain = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    chain
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
  <NextKeyMarker>team/cas/bb</NextKeyMarker><NextUploadIdMarker>id-2</NextUploadIdMarker>
  <Prefix>team/</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>true</IsTruncated>
  <Upload><Key>team/cas/aa</Key><UploadId>id-1</UploadId>
    <Initiator><ID>x</ID></Initiator><StorageClass>STANDARD</StorageClass>
    <Initiated>2026-12-06T02:00:00.000Z</Initiated></Upload>
  <Upload><Key>team/cas/bb</Key><UploadId>id-2</UploadId>
    <Initiated>not a date</Initiated></Upload>
</ListMultipartUploadsResult>"#;

    #[test]
    fn a_listing_page_gives_its_uploads_and_where_the_next_starts() {
        let page = parse_page(StatusCode::OK, PAGE.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            page.uploads,
            vec![Upload {
                key: "team/cas/aa".into(),
                id: "id-1".into(),
                initiated: 1_796_522_400,
            }],
            "an upload with an unreadable start is kept, so it is not listed"
        );
        assert!(page.truncated);
        assert_eq!(page.next, Some(("team/cas/bb".into(), "id-2".into())));
        let last = PAGE.replace("true", "false").replace(
            "<NextKeyMarker>team/cas/bb</NextKeyMarker>",
            "<NextKeyMarker/>",
        );
        let page = parse_page(StatusCode::OK, last.as_bytes())
            .unwrap()
            .unwrap();
        assert!(!page.truncated && page.next.is_none());
    }

    #[test]
    fn a_server_without_the_listing_is_unsupported_not_an_error() {
        let body = b"<Error><Code>NotImplemented</Code><Message>no</Message></Error>";
        let why = parse_page(StatusCode::NOT_IMPLEMENTED, body)
            .unwrap()
            .unwrap_err();
        assert!(
            why.contains("HTTP 501 Not Implemented: NotImplemented"),
            "{why}"
        );
        let objects = b"<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name></ListBucketResult>";
        let why = parse_page(StatusCode::OK, objects).unwrap().unwrap_err();
        assert!(why.contains("answered with ListBucketResult"), "{why}");
        let denied = b"<Error><Code>AccessDenied</Code></Error>";
        let err = parse_page(StatusCode::FORBIDDEN, denied).unwrap_err();
        assert_eq!(err, "HTTP 403 Forbidden: AccessDenied");
    }

    #[test]
    fn keys_and_ids_are_encoded_as_they_are_signed() {
        assert_eq!(strict("team/cas/a b+c~"), "team%2Fcas%2Fa%20b%2Bc~");
    }

    #[test]
    fn the_bucket_url_follows_object_stores_rules() {
        let creds = || -> AwsCredentialProvider {
            Arc::new(object_store::StaticCredentialProvider::new(
                object_store::aws::AwsCredential {
                    key_id: "k".into(),
                    secret_key: "s".into(),
                    token: None,
                },
            ))
        };
        let b = AmazonS3Builder::new()
            .with_bucket_name("bk")
            .with_endpoint("http://127.0.0.1:9000/")
            .with_virtual_hosted_style_request(false);
        let u = S3Uploads::new(&b, creds(), "team");
        assert_eq!(u.bucket_url, "http://127.0.0.1:9000/bk");
        assert_eq!(u.prefix, "team/");
        assert_eq!(u.region, "us-east-1");
        let b = AmazonS3Builder::new()
            .with_bucket_name("bk")
            .with_region("eu-west-1")
            .with_virtual_hosted_style_request(true);
        let u = S3Uploads::new(&b, creds(), "");
        assert_eq!(u.bucket_url, "https://bk.s3.eu-west-1.amazonaws.com");
        assert_eq!(u.prefix, "");
    }
}
