// Package sharedstore puts RIVAL_STORE, the registry a team's hosts share, to work for a workspace:
// as the runner's remote cache (Remote: asked after the local cache, offered every record, each
// training run's result shared as a result entry), as the source of compare's shared results
// (Remote.Results), and behind the store targets: store:ls (List), store:pull (Pull) and
// verify:result store:ID (ReadResult). A store that is down, slow or refuses the credentials
// warns once and the run goes on with the local cache; the targets, whose point is the store,
// stop instead. Package store speaks the registry's protocol; this package decides what to do
// with it.
//
// Where things are: the remote, its settings and the shared results in remote.go; the targets in
// targets.go.
package sharedstore
