// Package images builds, records and pushes a workspace's platform images (image, image:push) and
// names the image a cluster run pulls.
//
// Where things are:
//
//   - building (build.go): Builder; the Dockerfile and pinned base of each platform; the image
//     task, keyed by the build context's digest and the base image's digest, never a tag; Ensure
//     and Connect, which rebuild an image gone from the daemon; the Record of what was built.
//   - pushing (push.go): Push and its PushRecord; SlurmImage and KubeImage, the reference every
//     node of a cluster pulls by digest, refused when the image was rebuilt after it was pushed;
//     enroot's spelling of a registry reference for pyxis.
package images
