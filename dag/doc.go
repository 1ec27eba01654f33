// Package dag is Rival's build engine: a Task declares its inputs and outputs, a Runner walks the
// graph of tasks (dependencies first, in parallel up to Jobs), and each task either materializes
// its outputs from the cache or runs and records them. It knows nothing of datasets, frameworks or
// GPUs; the product's targets in package tasks are built from it.
//
// # How a task's key is composed
//
// The key is cache.ActionKey (which hashes its own cache.KeySchema first) over these parts, each a (kind, name, value) triple; ActionKey sorts
// them and length-prefixes every string, so the order tasks list them in does not matter and no two
// different sets encode alike:
//
//	salt    schema           the engine's schema salt ("rival-tasks/v1"): bumped when outputs
//	                         change meaning in a way the declared inputs do not capture
//	task    id               Task.ID, the task's name and arguments
//	param   <name>           each Task.Params entry: settings that change the output, and only those
//	env     <NAME>           the value of each variable in Task.Env (a credential such as HF_TOKEN
//	                         is refused, never hashed)
//	tool    <name>           each Task.Tools entry: versions and digests of what ran
//	file    <path>           the content digest of each Task.Files entry (a directory as a tree),
//	                         read through the cache's stat cache
//	dep     <id>: <path>     the digest of every output of every dependency
//	output  <nnn>            where each output goes: a record made for other paths never answers
//	                         for these
//
// Paths enter keys and records through RelPath: relative to Runner.Root when they lie inside it, so
// two checkouts sharing one cache share hits, and each gets its own files.
//
// # What a run guarantees
//
// Task.Prepare runs after the dependencies and before the key is computed, for inputs known only
// once upstream outputs exist. A hit restores every output (stale siblings removed first) without
// running anything. A miss takes the key's lock and one lock per output (named by the output's
// folder as the kernel sees it, so two spellings of one path take one lock), runs Task.Run, and
// records exactly the files its writers published, read once, only if none changed before the
// store. A read-only cache serves hits without locks; a full one keeps the outputs and warns. Exclusive tasks
// never overlap, within a process or across processes sharing the cache.
package dag
