//! The stores a remote can live on, behind `object_store`: an S3-compatible bucket or a shared
//! folder, with a small tokio runtime of its own so the rest of the engine stays synchronous.
//!
//! Everything here is blocking from the caller's side and speaks in the remote's own paths
//! (`cas/<digest>`, `ac/<key>.json`); what those paths mean is the business of the files
//! beside this one. Create-only puts (`PutMode::Create`) make "the first writer wins" a
//! property of the store, not of a lock we would have to hold: an existing object is success.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

use super::RemoteError;

/// Objects at least this large are uploaded in parts, so an interrupted upload leaves nothing
/// visible and a retry resends a part, not the whole file.
pub(crate) const MULTIPART_FROM: u64 = 16 << 20;

/// The size of one uploaded part.
const PART_SIZE: usize = 8 << 20;

/// A remote store and the runtime that drives it.
pub(crate) struct Backend {
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
    /// Where it points, for messages (`s3://bucket/prefix`, `file:///path`).
    pub(crate) url: String,
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
        let bad = |why: String| RemoteError::Config {
            url: url.to_string(),
            why,
        };
        let parsed = url::Url::parse(url).map_err(|e| {
            bad(format!(
                "{e}; write s3://bucket/prefix or file:///absolute/folder"
            ))
        })?;
        let store: Arc<dyn ObjectStore> = match parsed.scheme() {
            "file" => {
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
                Arc::new(fs)
            }
            "s3" => {
                let bucket = parsed
                    .host_str()
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| bad("no bucket: write s3://bucket/prefix".into()))?;
                // TLS through ring (see Cargo.toml); an error means a provider is installed.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut builder =
                    object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
                builder = super::credentials::apply_profile(builder);
                if let Some(region) = &conn.region {
                    builder = builder.with_region(region);
                }
                let endpoint = conn
                    .endpoint
                    .clone()
                    .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok());
                // `with_client_options` replaces the builder's own `allow_http`, so it is
                // set here, together with timeouts that let a dead remote fail in seconds.
                let mut client = object_store::ClientOptions::new()
                    .with_connect_timeout(std::time::Duration::from_secs(5))
                    .with_timeout(std::time::Duration::from_secs(300));
                if let Some(endpoint) = &endpoint {
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_virtual_hosted_style_request(false);
                    let env_allows = std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| v == "true");
                    client = client.with_allow_http(endpoint.starts_with("http://") || env_allows);
                }
                builder =
                    builder
                        .with_client_options(client)
                        .with_retry(object_store::RetryConfig {
                            max_retries: 3,
                            retry_timeout: std::time::Duration::from_secs(20),
                            ..Default::default()
                        });
                let s3 = builder.build().map_err(|e| {
                    bad(format!(
                        "{e}; set the AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) or a profile in ~/.aws/credentials"
                    ))
                })?;
                let prefix = parsed.path().trim_matches('/');
                if prefix.is_empty() {
                    Arc::new(s3)
                } else {
                    Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
                }
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
        })
    }

    fn error(&self, what: &str, path: &str, e: object_store::Error) -> RemoteError {
        RemoteError::from_store(&self.url, what, path, e)
    }

    /// The object's size, or `None` when it does not exist.
    pub(crate) fn size(&self, path: &str) -> Result<Option<u64>, RemoteError> {
        let location = StorePath::from(path);
        match self.runtime.block_on(self.store.head(&location)) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("look up", path, e)),
        }
    }

    /// The whole object, or `None` when it does not exist (for small objects: records).
    pub(crate) fn get_bytes(&self, path: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let location = StorePath::from(path);
        let result = self.runtime.block_on(async {
            let got = self.store.get(&location).await?;
            got.bytes().await
        });
        match result {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("download", path, e)),
        }
    }

    /// Streams the object into `out`, feeding every chunk to `on_chunk` (hashing, progress)
    /// as it arrives. Returns the number of bytes, or `None` when it does not exist.
    pub(crate) fn get_into(
        &self,
        path: &str,
        out: &mut dyn Write,
        on_chunk: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<u64>, RemoteError> {
        let location = StorePath::from(path);
        let result: Result<u64, object_store::Error> = self.runtime.block_on(async {
            let mut stream = self.store.get(&location).await?.into_stream();
            let mut n = 0u64;
            while let Some(chunk) = stream.next().await {
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
        match self.runtime.block_on(self.store.put_opts(
            &location,
            PutPayload::from(bytes),
            options,
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
        // Content-addressed: an object that exists already holds these bytes.
        if self.size(path)?.is_some() {
            return Ok(false);
        }
        let location = StorePath::from(path);
        let result: Result<(), object_store::Error> = self.runtime.block_on(async {
            let upload = self.store.put_multipart(&location).await?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            let mut file = std::fs::File::open(src).map_err(|e| object_store::Error::Generic {
                store: "local file",
                source: Box::new(e),
            })?;
            let mut buf = vec![0u8; PART_SIZE];
            loop {
                let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| {
                    object_store::Error::Generic {
                        store: "local file",
                        source: Box::new(e),
                    }
                })?;
                if n == 0 {
                    break;
                }
                writer.wait_for_capacity(4).await?;
                writer.write(&buf[..n]);
            }
            writer.finish().await?;
            Ok(())
        });
        result
            .map(|()| true)
            .map_err(|e| self.error("upload", path, e))
    }

    /// Moves an object aside (a corrupt blob to `quarantine/`), so nobody downloads it again.
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<(), RemoteError> {
        let (a, b) = (StorePath::from(from), StorePath::from(to));
        self.runtime
            .block_on(self.store.rename(&a, &b))
            .map_err(|e| self.error("move", from, e))
    }

    /// Every object under `prefix` (`ac/`, `cas/`) with its size.
    pub(crate) fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, RemoteError> {
        let location = StorePath::from(prefix);
        let result: Result<Vec<(String, u64)>, object_store::Error> =
            self.runtime.block_on(async {
                let mut stream = self.store.list(Some(&location));
                let mut out = Vec::new();
                while let Some(meta) = stream.next().await {
                    let meta = meta?;
                    out.push((meta.location.to_string(), meta.size));
                }
                Ok(out)
            });
        result.map_err(|e| self.error("list", prefix, e))
    }
}
