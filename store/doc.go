// Package store is Rival's shared store: a repository of an OCI registry (the CNCF distribution
// registry, Harbor, GHCR, ECR, Artifactory) that a team's hosts use as a remote cache and as the
// place every result goes, named by RIVAL_STORE=oci://HOST[:PORT]/REPOSITORY (ParseLocation).
//
// Open reaches the registry through oras-go with bounded timeouts: plain HTTP only on a loopback
// address or when Options.Insecure says so, credentials from Options.Credential. Every entry is
// one OCI image manifest under a tag. An action entry (PushAction, PullAction; tag ActionTag) holds
// a cache.Record as its config and the task's outputs as its layers; a result entry (PushResult,
// Results; tag ResultTag) holds a result JSON and its log, with the columns store:ls shows as
// annotations.
//
// Registries refuse blake3: digests, so blobs travel with sha256 wire digests and every
// descriptor carries the content's BLAKE3 in the dev.rival.blake3 annotation. BLAKE3 is what
// Rival trusts: Pull streams a blob into the local cache hashing both, and a blob whose BLAKE3 is
// not the recorded one is ErrIntegrity, never stored under the recorded digest. Push uploads every
// blob before the manifest, so a reader sees a whole entry or none, and never replaces an entry.
// Blobs stream with constant memory; a pull that breaks off resumes with a ranged request, a push
// is retried blob by blob (Options.Attempts), and a transfer that stalls is abandoned (Options.Stall). The package imports only cache.
package store
