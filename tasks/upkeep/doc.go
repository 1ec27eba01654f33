// Package upkeep keeps a workspace tidy: it reports on, trims and verifies the cache, purges the
// folders Rival created, and wraps the results into one zip to hand on. It knows nothing of the
// workspace's configuration: package tasks passes in the cache, the workspace root, the folders and
// limits as configured, and where messages go; its targets (cache:stats, cache:trim, cache:verify,
// purge, purge:data, wrap) are thin calls into this package.
//
// Where things are:
//
//   - cache.go: CacheStats, CacheTrim and CacheVerify, the cache's report, trim and rehash.
//   - purge.go: Purge, which removes only Folders Rival marked as its own, after checking them all.
//   - dirmarker.go: the .rival-dir marker MakeOwnDir writes into a folder it creates, and the check
//     purge makes of it.
//   - wrap.go: WrapTask, the zip of OUTPUT_DIR with every file's digest and every result's
//     provenance.
package upkeep
