package hw

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// NvidiaSMIXMLArgs are the arguments of the full XML query (`nvidia-smi -q -x`),
// the form most cluster tooling captures.
func NvidiaSMIXMLArgs() []string { return []string{"-q", "-x"} }

// nvidiaXML holds the elements of `nvidia-smi -q -x` that detection uses. Element
// names are those of nvsmi_device_v10..v13; older drivers print power_readings
// where newer ones print gpu_power_readings.
type nvidiaXML struct {
	XMLName xml.Name `xml:"nvidia_smi_log"`
	Driver  string   `xml:"driver_version"`
	GPUs    []struct {
		ID      string `xml:"id,attr"`
		Name    string `xml:"product_name"`
		UUID    string `xml:"uuid"`
		Minor   string `xml:"minor_number"`
		MIGMode struct {
			Current string `xml:"current_mig"`
		} `xml:"mig_mode"`
		MIGDevices []struct {
			Index string `xml:"index"`
		} `xml:"mig_devices>mig_device"`
		PCI struct {
			DeviceID string `xml:"pci_device_id"`
			BusID    string `xml:"pci_bus_id"`
		} `xml:"pci"`
		FB struct {
			Total string `xml:"total"`
		} `xml:"fb_memory_usage"`
		Power    nvidiaXMLPower `xml:"gpu_power_readings"`
		OldPower nvidiaXMLPower `xml:"power_readings"`
		Max      struct {
			SM string `xml:"sm_clock"`
		} `xml:"max_clocks"`
	} `xml:"gpu"`
}

type nvidiaXMLPower struct {
	Current  string `xml:"current_power_limit"`
	Limit    string `xml:"power_limit"`
	Enforced string `xml:"enforced_power_limit"`
}

// ParseNvidiaSMIXML reads `nvidia-smi -q -x`. GPUs are indexed in document order
// (nvidia-smi lists them by PCI bus id, as it numbers them). Memory, power and
// clocks print with units ("81920 MiB", "500.00 W", "1410 MHz") or "N/A".
func ParseNvidiaSMIXML(data []byte) ([]GPU, []string, error) {
	var doc nvidiaXML
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("nvidia-smi -q -x: not an nvidia_smi_log document: %w", err)
	}
	if len(doc.GPUs) == 0 {
		return nil, nil, fmt.Errorf("nvidia-smi -q -x: no <gpu> element")
	}
	var warnings []string
	gpus := make([]GPU, 0, len(doc.GPUs))
	for i, x := range doc.GPUs {
		g := GPU{Vendor: VendorNVIDIA, Index: i, Name: xmlValue(x.Name), UUID: xmlValue(x.UUID), Driver: xmlValue(doc.Driver)}
		if g.Name == "" {
			return nil, nil, fmt.Errorf("nvidia-smi -q -x: gpu %d (%s) has no product_name", i, x.ID)
		}
		g.PCIBusID = firstNonEmpty(xmlValue(x.PCI.BusID), x.ID)
		if v := xmlValue(x.FB.Total); v != "" {
			m, err := unitNumber(v, "MiB")
			if err != nil || m < 0 {
				return nil, nil, fmt.Errorf("nvidia-smi -q -x: gpu %d fb_memory_usage total %q is not a MiB count", i, v)
			}
			g.MemoryMiB = int64(m)
		} else {
			warnings = append(warnings, fmt.Sprintf("GPU %d (%s): nvidia-smi -q -x reported no fb_memory_usage total; memory unknown", i, g.Name))
		}
		if v := firstNonEmpty(xmlValue(x.Power.Current), xmlValue(x.Power.Limit), xmlValue(x.OldPower.Limit), xmlValue(x.Power.Enforced), xmlValue(x.OldPower.Enforced)); v != "" {
			w, err := unitNumber(v, "W")
			if err != nil || w < 0 {
				return nil, nil, fmt.Errorf("nvidia-smi -q -x: gpu %d power limit %q is not watts", i, v)
			}
			g.PowerLimitW = w
		}
		if v := xmlValue(x.Max.SM); v != "" {
			c, err := unitNumber(v, "MHz")
			if err != nil || c < 0 || c > 1e6 {
				return nil, nil, fmt.Errorf("nvidia-smi -q -x: gpu %d max sm_clock %q is not MHz", i, v)
			}
			g.MaxSMClockMHz = int(c)
		}
		if strings.EqualFold(xmlValue(x.MIGMode.Current), "Enabled") {
			g.Partition = "MIG enabled"
			if n := len(x.MIGDevices); n > 0 {
				g.Partition = fmt.Sprintf("MIG enabled: %d instances", n)
			}
		}
		var dev uint16
		if v := xmlValue(x.PCI.DeviceID); v != "" {
			if !strings.HasPrefix(strings.ToLower(v), "0x") {
				v = "0x" + v // "20B210DE": device id in the high half
			}
			dev = parseDeviceID(v)
			g.PCIDeviceID = fmt.Sprintf("0x%04x", dev)
		}
		g.Model = CanonicalModel(VendorNVIDIA, g.Name, dev)
		gpus = append(gpus, g)
	}
	return gpus, warnings, nil
}

// xmlValue trims an element's text; "N/A" and "[N/A]" mean absent.
func xmlValue(s string) string {
	s = strings.TrimSpace(s)
	if isNA(s) {
		return ""
	}
	return s
}

// unitNumber reads "81920 MiB" expecting unit (or no unit).
func unitNumber(v, unit string) (float64, error) {
	num, u, _ := strings.Cut(strings.TrimSpace(v), " ")
	if u != "" && !strings.EqualFold(strings.TrimSpace(u), unit) {
		return 0, fmt.Errorf("unit %q, want %s", u, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f != f {
		return 0, fmt.Errorf("%q is not a number", num)
	}
	return f, nil
}
