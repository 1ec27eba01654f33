// Package hubtest runs a loopback HTTP server that answers like the Hugging Face Hub, for tests of
// the hub client: resolve URLs for models and datasets, 302 redirects of LFS files to a second
// host (the "CDN") with X-Linked-Etag / X-Linked-Size / X-Repo-Commit, Range requests, the hub's
// X-Error-Code refusals (GatedRepo, RepoNotFound, RevisionNotFound, EntryNotFound), and injected
// faults: 5xx replies, truncated bodies, ignored ranges, wrong hashes, stalls.
//
// [New] starts the hub and its CDN; [Server.Add] serves a [File], [Server.SetFaults] injects
// [Faults] for one file, and [Server.Hits] lists the requests that arrived. It imports nothing from
// Rival, so hub's tests and the fetch target's tests drive the real client against it.
package hubtest
