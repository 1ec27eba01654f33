// Package images builds, records and pushes a workspace's platform images (image, image:push) and
// names the image a cluster run pulls.
//
// Where things are:
//
//   - building (build.go): Builder; the Dockerfile and pinned base of each platform; the image
//     task, keyed by the build context's digest and the base image's digest, never a tag; Ensure
//     and Connect, which rebuild an image gone from the daemon; the Record of what was built.
//   - pushing (push.go): Push, which records what it pushed beside OUTPUT_DIR's results; SlurmImage
//     and KubeImage, the reference every node of a cluster pulls by digest, refused when the image
//     was rebuilt after it was pushed; enroot's spelling of a registry reference for pyxis.
//   - Recorded reads what the image task last built (verify:result compares its ID with a
//     result's); ShortID prints an image ID as docker does.
package images
