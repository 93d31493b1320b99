package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// A volume is a tenant's directory with a disk limit of its own, kept on
// one node, that outlives the sandboxes that mount it: one read-write
// mount at a time, or any number of read-only ones. Its size counts in
// the tenant's storage quota from create to delete.

// VolumeMount mounts one of the tenant's volumes into a sandbox.
type VolumeMount struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Volume is a tenant's volume, as the API shows it.
type Volume struct {
	Name      string    `json:"name"`
	SizeMB    int64     `json:"size_mb"`
	Node      string    `json:"node"`
	CreatedAt time.Time `json:"created_at"`
}

// VolumeRequest is POST /v1/volumes.
type VolumeRequest struct {
	Name   string `json:"name"`
	SizeMB int64  `json:"size_mb"`
	// Node is where to keep it; "" is this server's own host.
	Node string `json:"node,omitempty"`
}

// Volume limits.
const (
	MaxVolumeMB      = 1 << 20 // 1 TiB
	MaxVolumesPerBox = 8
)

type volumeSpec struct {
	Runtime string `json:"runtime"`
}

func volumeOf(d sandboxrec.Disk) (Volume, volumeSpec) {
	var sp volumeSpec
	json.Unmarshal([]byte(d.Spec), &sp) // written by this package
	return Volume{Name: d.Name, SizeMB: d.Bytes >> 20, Node: d.Node, CreatedAt: d.CreatedAt.UTC()}, sp
}

func (s *Service) volumer(ctx context.Context, node string) (runtime.Volumer, error) {
	rt, err := s.on(ctx, node)
	if err != nil {
		return nil, err
	}
	v, ok := rt.(runtime.Volumer)
	if !ok {
		return nil, fmt.Errorf("%w: node %s cannot keep volumes", ErrUnavailable, node)
	}
	return v, nil
}

// CreateVolume makes an empty volume for the caller's tenant.
func (s *Service) CreateVolume(ctx context.Context, c Caller, req VolumeRequest) (Volume, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return Volume{}, fmt.Errorf("%w: a sandbox token cannot create volumes", ErrInvalid)
	}
	if err := validDiskName("volume", req.Name); err != nil {
		return Volume{}, err
	}
	if req.SizeMB < runtime.MinDiskMB || req.SizeMB > MaxVolumeMB {
		return Volume{}, fmt.Errorf("%w: size_mb %d: want %d to %d", ErrInvalid, req.SizeMB, runtime.MinDiskMB, MaxVolumeMB)
	}
	node := nodeOr(req.Node)
	unlock := s.locks.lock("volume/" + c.TenantID + "/" + req.Name)
	defer unlock()
	if _, err := s.st.GetDisk(ctx, sandboxrec.DiskVolume, c.TenantID, req.Name); err == nil {
		return Volume{}, fmt.Errorf("%w: volume %s exists", ErrConflict, req.Name)
	}
	if err := s.checkDiskRoom(ctx, c.TenantID, req.SizeMB<<20); err != nil {
		return Volume{}, err
	}
	v, err := s.volumer(ctx, node)
	if err != nil {
		return Volume{}, err
	}
	rtName, err := runtimeName("v-")
	if err != nil {
		return Volume{}, err
	}
	ctx = context.WithoutCancel(ctx)
	if err := v.CreateVolume(ctx, rtName, req.SizeMB); err != nil {
		return Volume{}, templateErr(err)
	}
	spec, _ := json.Marshal(volumeSpec{Runtime: rtName})
	d := sandboxrec.Disk{Kind: sandboxrec.DiskVolume, TenantID: c.TenantID, Name: req.Name, Node: node,
		Bytes: req.SizeMB << 20, CreatedAt: s.now(), Spec: string(spec)}
	if err := s.st.CreateDisk(ctx, d); err != nil {
		if derr := v.DeleteVolume(ctx, rtName); derr != nil {
			s.log.Error("delete volume after failed save", "volume", rtName, "err", derr)
		}
		if errors.Is(err, store.ErrConflict) {
			return Volume{}, fmt.Errorf("%w: volume %s exists", ErrConflict, req.Name)
		}
		return Volume{}, fmt.Errorf("save volume %s: %w", req.Name, err)
	}
	vol, _ := volumeOf(d)
	return vol, nil
}

// checkDiskRoom refuses n more bytes for a tenant that would pass its
// storage quota with them.
func (s *Service) checkDiskRoom(ctx context.Context, tenant string, n int64) error {
	t, err := s.tenants.get(ctx, s.st, tenant, s.now())
	if err != nil {
		return fmt.Errorf("load tenant %s: %w", tenant, err)
	}
	if t.MaxStorageMB <= 0 {
		return nil
	}
	quota, used := t.MaxStorageMB<<20, s.audit.storageUsed(tenant)
	if used+n <= quota {
		return nil
	}
	return storageQuotaError(fmt.Sprintf("tenant %s keeps %s of its %s storage quota; %s more does not fit",
		t.Name, FormatBytes(used), FormatBytes(quota), FormatBytes(n)))
}

// Volumes lists the caller's volumes.
func (s *Service) Volumes(ctx context.Context, c Caller) ([]Volume, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return []Volume{}, nil
	}
	ds, err := s.st.ListDisks(ctx, sandboxrec.DiskVolume, c.TenantID)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := make([]Volume, 0, len(ds))
	for _, d := range ds {
		v, _ := volumeOf(d)
		out = append(out, v)
	}
	return out, nil
}

// GetVolume returns the caller's volume name.
func (s *Service) GetVolume(ctx context.Context, c Caller, name string) (Volume, error) {
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskVolume, name)
	if err != nil {
		return Volume{}, err
	}
	v, _ := volumeOf(d)
	return v, nil
}

// DeleteVolume deletes the caller's volume and all it holds; refused
// while a sandbox mounts it.
func (s *Service) DeleteVolume(ctx context.Context, c Caller, name string) error {
	unlock := s.locks.lock("volume/" + c.TenantID + "/" + name)
	defer unlock()
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskVolume, name)
	if err != nil {
		return err
	}
	if ids, _, err := s.mountedBy(ctx, c.TenantID, name); err != nil {
		return err
	} else if len(ids) > 0 {
		return fmt.Errorf("%w: volume %s is mounted by %s: delete those sandboxes first", ErrConflict, name, strings.Join(ids, ", "))
	}
	_, sp := volumeOf(d)
	v, err := s.volumer(ctx, d.Node)
	if err != nil {
		return err
	}
	if err := v.DeleteVolume(ctx, sp.Runtime); err != nil {
		return templateErr(err)
	}
	if err := s.st.DeleteDisk(ctx, sandboxrec.DiskVolume, c.TenantID, name); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	return nil
}

// mountedBy are the tenant's live sandboxes that mount volume name, and
// those of them that mount it read-write.
func (s *Service) mountedBy(ctx context.Context, tenant, name string) (all, rw []string, err error) {
	for _, state := range []string{sandboxrec.Creating, sandboxrec.Running, sandboxrec.Paused} {
		recs, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{TenantID: tenant, State: state})
		if err != nil {
			return nil, nil, fmt.Errorf("list sandboxes: %w", err)
		}
		for _, rec := range recs {
			for _, m := range lifecycleOf(rec).Volumes {
				if m.Name == name {
					all = append(all, rec.ID)
					if !m.ReadOnly {
						rw = append(rw, rec.ID)
					}
				}
			}
		}
	}
	return all, rw, nil
}

// resolveVolumes checks req's volumes and returns them as the runtime
// names them, with the node that holds them ("" for none).
func (s *Service) resolveVolumes(ctx context.Context, c Caller, req CreateRequest) ([]runtime.VolumeMount, string, error) {
	if len(req.Volumes) == 0 {
		return nil, "", nil
	}
	if len(req.Volumes) > MaxVolumesPerBox {
		return nil, "", fmt.Errorf("%w: volumes: at most %d per sandbox", ErrInvalid, MaxVolumesPerBox)
	}
	var out []runtime.VolumeMount
	node := ""
	seen := map[string]bool{}
	for i, v := range req.Volumes {
		if err := validMountPath(v.Path); err != nil {
			return nil, "", fmt.Errorf("%w: volumes[%d].path: %v", ErrInvalid, i, err)
		}
		if seen["name:"+v.Name] || seen["path:"+path.Clean(v.Path)] {
			return nil, "", fmt.Errorf("%w: volumes[%d]: volume %s or path %s given twice", ErrInvalid, i, clip(v.Name), clip(v.Path))
		}
		seen["name:"+v.Name], seen["path:"+path.Clean(v.Path)] = true, true
		d, err := s.ownDisk(ctx, c, sandboxrec.DiskVolume, v.Name)
		if err != nil {
			return nil, "", fmt.Errorf("volumes[%d]: %w", i, err)
		}
		if node != "" && d.Node != node {
			return nil, "", fmt.Errorf("%w: volumes are on nodes %s and %s: one sandbox mounts volumes of one node", ErrInvalid, node, d.Node)
		}
		node = d.Node
		if err := s.checkMount(ctx, c.TenantID, v); err != nil {
			return nil, "", err
		}
		_, sp := volumeOf(d)
		out = append(out, runtime.VolumeMount{Name: sp.Runtime, Path: path.Clean(v.Path), ReadOnly: v.ReadOnly})
	}
	return out, node, nil
}

// checkMount refuses a read-write mount of a volume another sandbox of
// the tenant mounts, or any mount of one mounted read-write, naming them.
// (The runtime checks again, under its lock: two creates may race here.)
func (s *Service) checkMount(ctx context.Context, tenant string, v VolumeMount) error {
	all, rw, err := s.mountedBy(ctx, tenant, v.Name)
	switch {
	case err != nil:
		return err
	case len(rw) > 0:
		return fmt.Errorf("%w: volume %s is mounted read-write by %s (one read-write mount at a time, or many read-only)", ErrConflict, v.Name, strings.Join(rw, ", "))
	case !v.ReadOnly && len(all) > 0:
		return fmt.Errorf("%w: volume %s is mounted by %s: a read-write mount needs it to itself", ErrConflict, v.Name, strings.Join(all, ", "))
	}
	return nil
}

// validMountPath: absolute, free of NULs, and not where the sandbox's own
// filesystems and system directories are: on or under /proc, /sys, /dev,
// /tmp, /var/tmp, /usr, /etc, /bin, /sbin, /lib, /lib64, nor on /,
// /home or /home/user themselves (beneath /home/user is the workspace's
// and fine).
func validMountPath(p string) error {
	if p == "" || !path.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%s: want an absolute path", clip(p))
	}
	c := path.Clean(p)
	if err := CheckPathLength(c); err != nil {
		return err
	}
	for _, no := range []string{"/", "/home", "/home/user"} {
		if c == no {
			return fmt.Errorf("%s: a volume cannot go on %s", clip(p), no)
		}
	}
	for _, no := range []string{"/proc", "/sys", "/dev", "/tmp", "/var/tmp", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64"} {
		if c == no || strings.HasPrefix(c, no+"/") {
			return fmt.Errorf("%s: a volume cannot go on or under %s", clip(p), no)
		}
	}
	return nil
}
