// Package container is Rival's layer over the Docker Engine API: build contexts and their digests,
// image builds with the classic builder, image pushes, and training containers (AMD, NVIDIA, CPU)
// whose logs stream line by line and which never outlive the run that started them.
//
// # Entry points
//
//   - [Connect] reaches the daemon (DOCKER_HOST or the default socket) and returns an [Engine].
//   - [WriteContext] and [ContextDigest] produce, and key, the exact bytes a build sends; the
//     context follows .dockerignore and never carries secrets.env.
//   - [Engine.Build] builds an image from a [BuildSpec]; [Engine.Push] pushes it with the Docker
//     config's credentials ([RegistryAuth]).
//   - [Engine.Run] runs a [RunSpec] with the platform's devices and streams its output;
//     [Engine.Shell] runs the same container interactively, and [DockerRunCommand] prints the
//     equivalent `docker run` for running it by hand.
//   - [Engine.RemoveStrays] removes containers a crashed run left behind, found by their labels
//     ([LabelManaged], [LabelRun]).
//
// # Dependencies
//
// From Rival it imports only its subpackage dockerapi, the Engine API client (the calls above,
// over the daemon's socket); package tasks builds the benchmark images and runs the trainers
// through it. Subpackage registrytest starts a real image registry for tests, and dockertest
// gives them the daemon's own client library as an independent second client.
package container
