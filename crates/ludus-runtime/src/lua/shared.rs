//! What every VM of the pool shares: settings, the server's services, the
//! local cache and a handle to the async runtime for calls into the server.

use std::sync::Arc;

use crate::localcache::LocalCache;
use crate::runtime::RuntimeSettings;
use crate::services::RuntimeServices;

pub struct LuaShared {
    pub settings: RuntimeSettings,
    pub services: Arc<dyn RuntimeServices>,
    pub cache: Arc<LocalCache>,
    /// VMs run on blocking threads; server calls are driven with `block_on`.
    pub handle: tokio::runtime::Handle,
}
