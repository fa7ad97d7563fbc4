//! The stores a remote can live on, behind `object_store`: an S3-compatible bucket or a shared
//! folder, with a small tokio runtime of its own so the rest of the engine stays synchronous.
//!
//! Everything here is blocking from the caller's side and speaks in the remote's own paths
//! (`cas/<digest>`, `ac/<key>.json`); what those paths mean is the business of the files
//! beside this one. Create-only puts (`PutMode::Create`) make "the first writer wins" a
//! property of the store, not of a lock we would have to hold: an existing object is success.
//! Some servers (s3rver, some MinIO set-ups) ignore `If-None-Match`; [`Backend::create_only_holds`]
//! finds out, once, by writing a probe object twice.
//!
//! Every request has a limit sized for what it does ([`super::limits`]), so a remote that
//! stops answering costs seconds, not minutes.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

use super::error::RemoteError;
use super::limits::{upload_limit, CONNECT, SMALL, STALL};
use super::uploads::{S3Uploads, Unfinished, Upload};

/// Objects at least this large are uploaded in parts, so an interrupted upload leaves nothing
/// visible and a retry resends a part, not the whole file.
pub(crate) const MULTIPART_FROM: u64 = 16 << 20;

/// The size of one uploaded part.
const PART_SIZE: usize = 8 << 20;

/// `fut`, or a timeout error after `limit`.
async fn within<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, object_store::Error>>,
) -> Result<T, object_store::Error> {
    match tokio::time::timeout(limit, fut).await {
        Ok(result) => result,
        Err(_) => Err(object_store::Error::Generic {
            store: "remote",
            source: format!("timed out: no answer within {} s", limit.as_secs()).into(),
        }),
    }
}

/// An error of a request `object_store` does not make, as its own errors are.
fn generic(why: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: why.into(),
    }
}

/// A configuration error of the remote `url`.
fn config_error(url: &str, why: String) -> RemoteError {
    RemoteError::Config {
        url: url.to_string(),
        why,
    }
}

/// A remote store and the runtime that drives it.
pub(crate) struct Backend {
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
    /// Where it points, for messages (`s3://bucket/prefix`, `file:///path`).
    pub(crate) url: String,
    /// The shared folder of a `file://` remote (for what `object_store` does not show:
    /// unfinished uploads).
    pub(crate) folder: Option<PathBuf>,
    /// The bucket of an `s3://` remote, for what `object_store` does not do: list and abort
    /// unfinished uploads.
    uploads: Option<S3Uploads>,
    /// Set when no S3 credentials were found, so a refusal can say so.
    no_credentials: Option<String>,
}

/// What opening an `s3://` remote gives.
struct S3Store {
    /// The store, under the URL's prefix.
    store: Arc<dyn ObjectStore>,
    /// The bucket's unfinished uploads.
    uploads: S3Uploads,
    /// Set when no S3 credentials were found.
    no_credentials: Option<String>,
}

/// The connection settings besides the URL.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    /// S3 endpoint for non-AWS stores.
    pub endpoint: Option<String>,
    /// S3 region.
    pub region: Option<String>,
}

impl Backend {
    /// Opens the store `url` points to (nothing is contacted yet).
    pub(crate) fn open(url: &str, conn: &Connection) -> Result<Backend, RemoteError> {
        let bad = |why: String| config_error(url, why);
        let parsed = url::Url::parse(url).map_err(|e| {
            bad(format!(
                "{e}; write s3://bucket/prefix or file:///absolute/folder"
            ))
        })?;
        let mut folder = None;
        let mut uploads = None;
        let mut no_credentials = None;
        let store: Arc<dyn ObjectStore> = match parsed.scheme() {
            "file" => {
                let (store, dir) = Self::open_folder(url, &parsed)?;
                folder = Some(dir);
                store
            }
            "s3" => {
                let s3 = Self::open_s3(url, &parsed, conn)?;
                uploads = Some(s3.uploads);
                no_credentials = s3.no_credentials;
                s3.store
            }
            other => {
                return Err(bad(format!(
                    "unknown scheme `{other}:`; a remote is s3://bucket/prefix or file:///folder"
                )))
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("asymflow-remote")
            .enable_all()
            .build()
            .map_err(|e| bad(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Backend {
            store,
            runtime,
            url: url.to_string(),
            folder,
            uploads,
            no_credentials,
        })
    }

    /// The store of a `file://` remote: its shared folder, which must exist.
    fn open_folder(
        url: &str,
        parsed: &url::Url,
    ) -> Result<(Arc<dyn ObjectStore>, PathBuf), RemoteError> {
        let bad = |why: String| config_error(url, why);
        let dir = parsed.to_file_path().map_err(|()| {
            bad("a file remote needs an absolute path (file:///mnt/team/asymflow)".into())
        })?;
        if !dir.is_dir() {
            return Err(bad(format!(
                "the shared folder {} does not exist; mount it, or create it with `mkdir -p {}`",
                dir.display(),
                dir.display()
            )));
        }
        let fs = object_store::local::LocalFileSystem::new_with_prefix(&dir)
            .map_err(|e| bad(e.to_string()))?
            .with_automatic_cleanup(true);
        Ok((Arc::new(fs), dir))
    }

    /// The store of an `s3://` remote, its unfinished uploads, and the note to give when no
    /// credentials were found ([`S3Store`]): the bucket and prefix from the URL, the
    /// credentials from the environment or a profile, the endpoint and region from `conn`.
    fn open_s3(url: &str, parsed: &url::Url, conn: &Connection) -> Result<S3Store, RemoteError> {
        let bad = |why: String| config_error(url, why);
        let bucket = parsed
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| bad("no bucket: write s3://bucket/prefix".into()))?;
        // TLS through ring (see Cargo.toml); an error means a provider is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
        let (with_profile, found) = super::credentials::apply_profile(builder).map_err(bad)?;
        builder = with_profile;
        let no_credentials = found.missing_note();
        if let Some(region) = &conn.region {
            builder = builder.with_region(region);
        }
        let endpoint = conn
            .endpoint
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok());
        // `with_client_options` replaces the builder's own `allow_http`, so it is
        // set here, together with timeouts that let a dead remote fail in seconds.
        // No flat limit on a request: each call below gets its own, sized for it.
        let mut client = object_store::ClientOptions::new()
            .with_connect_timeout(CONNECT)
            .with_timeout_disabled()
            .with_read_timeout(STALL);
        if let Some(endpoint) = &endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
            let env_allows = std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| v == "true");
            client = client.with_allow_http(endpoint.starts_with("http://") || env_allows);
        }
        builder = builder
            .with_client_options(client)
            .with_retry(object_store::RetryConfig {
                max_retries: 3,
                retry_timeout: SMALL,
                ..Default::default()
            });
        let prefix = parsed.path().trim_matches('/');
        let config = builder.clone();
        let s3 = builder.build().map_err(|e| {
            bad(format!(
                "{e}; set the AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) or a profile in ~/.aws/credentials"
            ))
        })?;
        let uploads = S3Uploads::new(&config, s3.credentials().clone(), prefix);
        let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::new(s3)
        } else {
            Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
        };
        Ok(S3Store {
            store,
            uploads,
            no_credentials,
        })
    }

    fn error(&self, what: &str, path: &str, e: object_store::Error) -> RemoteError {
        let error = RemoteError::from_store(&self.url, what, path, e);
        // With no keys anywhere, whatever failed, the missing keys are the first thing to fix.
        match (error, &self.no_credentials) {
            (
                RemoteError::Unavailable {
                    url,
                    what,
                    path,
                    problem,
                    ..
                },
                Some(note),
            ) => RemoteError::Unavailable {
                url,
                what,
                path,
                problem,
                fix: note.clone(),
            },
            (error, _) => error,
        }
    }

    /// Whether create-only puts are honoured: a probe object under a unique name is written
    /// twice, create-only; the second write must fail. The probe is deleted afterwards.
    pub(crate) fn create_only_holds(&self) -> Result<bool, RemoteError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = format!(
            "probe/create-only-{}-{}-{nanos}",
            crate::cache::store::host_name()
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>(),
            std::process::id()
        );
        self.put_bytes_create(&path, b"first".to_vec())?;
        let overwrote = self.put_bytes_create(&path, b"second".to_vec())?;
        let _ = self.delete(&path);
        Ok(!overwrote)
    }

    /// Deletes an object (absent is fine).
    pub(crate) fn delete(&self, path: &str) -> Result<(), RemoteError> {
        let location = StorePath::from(path);
        match self
            .runtime
            .block_on(within(SMALL, self.store.delete(&location)))
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error("delete", path, e)),
        }
    }

    /// The object's size, or `None` when it does not exist.
    pub(crate) fn size(&self, path: &str) -> Result<Option<u64>, RemoteError> {
        let location = StorePath::from(path);
        match self
            .runtime
            .block_on(within(SMALL, self.store.head(&location)))
        {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("look up", path, e)),
        }
    }

    /// The whole object, or `None` when it does not exist (for small objects: records).
    pub(crate) fn get_bytes(&self, path: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let location = StorePath::from(path);
        let result = self.runtime.block_on(within(SMALL, async {
            let got = self.store.get(&location).await?;
            got.bytes().await
        }));
        match result {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("download", path, e)),
        }
    }

    /// Streams the object into `out`, feeding every chunk to `on_chunk` (hashing, progress)
    /// as it arrives. Returns the number of bytes, or `None` when it does not exist. It fails
    /// when [`STALL`] passes without a byte, however long the whole download takes.
    pub(crate) fn get_into(
        &self,
        path: &str,
        out: &mut dyn Write,
        on_chunk: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<u64>, RemoteError> {
        let location = StorePath::from(path);
        let result: Result<u64, object_store::Error> = self.runtime.block_on(async {
            let mut stream = within(SMALL, self.store.get(&location))
                .await?
                .into_stream();
            let mut n = 0u64;
            while let Some(chunk) = within(STALL, async { Ok(stream.next().await) }).await? {
                let chunk = chunk?;
                on_chunk(&chunk);
                out.write_all(&chunk)
                    .map_err(|e| object_store::Error::Generic {
                        store: "local temp file",
                        source: Box::new(e),
                    })?;
                n += chunk.len() as u64;
            }
            Ok(n)
        });
        match result {
            Ok(n) => Ok(Some(n)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("download", path, e)),
        }
    }

    /// Creates the object from `bytes` unless it exists. Returns whether this call created it.
    pub(crate) fn put_bytes_create(&self, path: &str, bytes: Vec<u8>) -> Result<bool, RemoteError> {
        let location = StorePath::from(path);
        let options = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let limit = upload_limit(bytes.len() as u64);
        match self.runtime.block_on(within(
            limit,
            self.store
                .put_opts(&location, PutPayload::from(bytes), options),
        )) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.error("upload", path, e)),
        }
    }

    /// Uploads the file at `src` as `path` unless the object exists. Large files go up in
    /// parts, which become visible only when the upload completes. Returns whether this call
    /// created it.
    pub(crate) fn put_file_create(&self, path: &str, src: &Path) -> Result<bool, RemoteError> {
        let size = std::fs::metadata(src)
            .map_err(|e| RemoteError::local(src, e))?
            .len();
        if size < MULTIPART_FROM {
            let bytes = std::fs::read(src).map_err(|e| RemoteError::local(src, e))?;
            return self.put_bytes_create(path, bytes);
        }
        let location = StorePath::from(path);
        let result: Result<(), object_store::Error> = self.runtime.block_on(async {
            let upload = within(SMALL, self.store.put_multipart(&location)).await?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            if let Err(e) = write_parts(&mut writer, src).await {
                // Nothing of a failed upload may stay behind on the store: only a killed
                // process leaves an unfinished upload (for `remote gc`).
                let _ = within(SMALL, writer.abort()).await;
                return Err(e);
            }
            // `finish` aborts by itself when a part or the completion fails.
            within(upload_limit(PART_SIZE as u64 * 4), writer.finish()).await?;
            Ok(())
        });
        result
            .map(|()| true)
            .map_err(|e| self.error("upload", path, e))
    }

    /// The unfinished multipart uploads of an S3 remote (each page of the listing within
    /// [`SMALL`]), or `None` for a store that is not S3.
    pub(crate) fn unfinished_uploads(&self) -> Result<Option<Unfinished>, RemoteError> {
        let Some(uploads) = &self.uploads else {
            return Ok(None);
        };
        self.runtime
            .block_on(async { uploads.list().await.map_err(generic) })
            .map(Some)
            .map_err(|e| self.error("list", "unfinished uploads", e))
    }

    /// Aborts an unfinished upload of an S3 remote (within [`SMALL`]).
    pub(crate) fn abort_upload(&self, upload: &Upload) -> Result<(), RemoteError> {
        let Some(uploads) = &self.uploads else {
            return Ok(());
        };
        self.runtime
            .block_on(async { uploads.abort(upload).await.map_err(generic) })
            .map_err(|e| self.error("abort the unfinished upload of", &upload.key, e))
    }

    /// Moves an object aside (a corrupt blob to `quarantine/`), so nobody downloads it again.
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<(), RemoteError> {
        let (a, b) = (StorePath::from(from), StorePath::from(to));
        self.runtime
            .block_on(within(
                upload_limit(MULTIPART_FROM),
                self.store.rename(&a, &b),
            ))
            .map_err(|e| self.error("move", from, e))
    }

    /// Every object under `prefix` (`ac/`, `cas/`) with its size.
    pub(crate) fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, RemoteError> {
        Ok(self
            .list_dated(prefix)?
            .into_iter()
            .map(|o| (o.path, o.size))
            .collect())
    }

    /// Every object under `prefix` with its size and when it was last written.
    pub(crate) fn list_dated(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        let location = StorePath::from(prefix);
        let result: Result<Vec<Listed>, object_store::Error> = self.runtime.block_on(async {
            let mut stream = self.store.list(Some(&location));
            let mut out = Vec::new();
            while let Some(meta) = within(SMALL, async { Ok(stream.next().await) }).await? {
                let meta = meta?;
                out.push(Listed {
                    path: meta.location.to_string(),
                    size: meta.size,
                    modified: meta.last_modified.timestamp(),
                });
            }
            Ok(out)
        });
        result.map_err(|e| self.error("list", prefix, e))
    }
}

/// Feeds the file at `src` to `writer`, part by part, four parts in flight at most.
async fn write_parts(writer: &mut WriteMultipart, src: &Path) -> Result<(), object_store::Error> {
    let local = |e: std::io::Error| object_store::Error::Generic {
        store: "local file",
        source: Box::new(e),
    };
    let mut file = std::fs::File::open(src).map_err(local)?;
    let mut buf = vec![0u8; PART_SIZE];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).map_err(local)?;
        if n == 0 {
            return Ok(());
        }
        // Four parts in flight: one of them must finish in the time its bytes need.
        within(
            upload_limit(PART_SIZE as u64 * 4),
            writer.wait_for_capacity(4),
        )
        .await?;
        writer.write(&buf[..n]);
    }
}

/// One object of a listing.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// Its path (`cas/<digest>`).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written, in seconds since the epoch.
    pub modified: i64,
}
