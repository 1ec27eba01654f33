package dockerapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
)

// BuildOptions are the query of a build with the classic builder.
type BuildOptions struct {
	Dockerfile string
	Tags       []string
	NoCache    bool
	BuildArgs  map[string]*string
	Labels     map[string]string
}

// ImageBuild sends a tar build context to the classic builder (removing intermediate containers,
// failed ones too) and returns its stream of JSON messages.
func (c *Client) ImageBuild(ctx context.Context, tarContext io.Reader, o BuildOptions) (Stream, error) {
	q := url.Values{"dockerfile": {o.Dockerfile}, "rm": {"1"}, "forcerm": {"1"}, "version": {"1"}}
	for _, t := range o.Tags {
		q.Add("t", t)
	}
	if o.NoCache {
		q.Set("nocache", "1")
	}
	for k, v := range map[string]any{"buildargs": o.BuildArgs, "labels": o.Labels} {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		q.Set(k, string(raw))
	}
	resp, err := c.request(ctx, http.MethodPost, "/build", q, tarContext, http.Header{"Content-Type": {"application/x-tar"}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImageInspect describes a local image.
func (c *Client) ImageInspect(ctx context.Context, ref string) (image.InspectResponse, error) {
	var out image.InspectResponse
	err := c.call(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, &out)
	return out, err
}

// ImageTag names image source repo:tag.
func (c *Client) ImageTag(ctx context.Context, source, repo, tag string) error {
	return c.call(ctx, http.MethodPost, "/images/"+source+"/tag", url.Values{"repo": {repo}, "tag": {tag}}, nil, nil)
}

// ImagePush pushes repo:tag with auth (the X-Registry-Auth header: base64url of the credentials'
// JSON) and returns the daemon's stream of JSON messages.
func (c *Client) ImagePush(ctx context.Context, repo, tag, auth string) (Stream, error) {
	resp, err := c.request(ctx, http.MethodPost, "/images/"+repo+"/push", url.Values{"tag": {tag}}, nil, http.Header{"X-Registry-Auth": {auth}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ContainerCreate makes a container named name (none when "") and returns its ID.
func (c *Client) ContainerCreate(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig) (string, error) {
	var q url.Values
	if name != "" {
		q = url.Values{"name": {name}}
	}
	var out container.CreateResponse
	err := c.call(ctx, http.MethodPost, "/containers/create", q, container.CreateRequest{Config: cfg, HostConfig: hc}, &out)
	return out.ID, err
}

// ContainerInspect describes a container, by ID or name.
func (c *Client) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	var out container.InspectResponse
	err := c.call(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &out)
	return out, err
}

// ContainerAttach attaches to a container's stdout and stderr (and its stdin when stdin), from
// the start of its output when attached before it starts.
func (c *Client) ContainerAttach(ctx context.Context, id string, stdin bool) (*Hijacked, error) {
	q := url.Values{"stream": {"1"}, "stdout": {"1"}, "stderr": {"1"}}
	if stdin {
		q.Set("stdin", "1")
	}
	return c.hijack(ctx, "/containers/"+id+"/attach", q)
}

// ContainerStart starts a created container.
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// ContainerWait waits for the container's next exit; call it before ContainerStart. It returns
// once the daemon took the request: the exit arrives on the first channel, or a failure on the
// second, when ctx ends included.
func (c *Client) ContainerWait(ctx context.Context, id string) (<-chan container.WaitResponse, <-chan error) {
	results, errs := make(chan container.WaitResponse, 1), make(chan error, 1)
	resp, err := c.request(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {string(container.WaitConditionNextExit)}}, nil, nil)
	if err != nil {
		errs <- err
		return results, errs
	}
	go func() {
		defer resp.Body.Close()
		var res container.WaitResponse
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			errs <- fmt.Errorf("waiting for container %s: %w", id, err)
			return
		}
		results <- res
	}()
	return results, errs
}

// ContainerStop sends the container's stop signal, then SIGKILL after secs seconds.
func (c *Client) ContainerStop(ctx context.Context, id string, secs int) error {
	return c.call(ctx, http.MethodPost, "/containers/"+id+"/stop", url.Values{"t": {strconv.Itoa(secs)}}, nil, nil)
}

// ContainerRemove removes a container, killing it if it runs, with its anonymous volumes.
func (c *Client) ContainerRemove(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
}

// ContainerResize sets the size of a container's TTY.
func (c *Client) ContainerResize(ctx context.Context, id string, height, width uint) error {
	return c.call(ctx, http.MethodPost, "/containers/"+id+"/resize", url.Values{"h": {strconv.FormatUint(uint64(height), 10)}, "w": {strconv.FormatUint(uint64(width), 10)}}, nil, nil)
}

// ContainerList lists the containers, running or not, that carry every one of labels ("key" or
// "key=value").
func (c *Client) ContainerList(ctx context.Context, labels ...string) ([]container.Summary, error) {
	sort.Strings(labels)
	f := map[string]map[string]bool{}
	for _, l := range labels {
		if f["label"] == nil {
			f["label"] = map[string]bool{}
		}
		f["label"][l] = true
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out []container.Summary
	err = c.call(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(raw)}}, nil, &out)
	return out, err
}
