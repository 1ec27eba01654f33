// Command probe is the only program in the FROM-scratch images the container
// tests build: a static binary that does one observable thing per
// subcommand, so a test can check what a container saw and did.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe lines N | exit CODE | sleep SECONDS | cat PATH | write PATH | env NAME | pwd | repl | -c COMMAND")
		os.Exit(2)
	}
	arg := func(i int) string {
		if len(os.Args) <= i {
			fmt.Fprintf(os.Stderr, "probe %s: missing argument\n", os.Args[1])
			os.Exit(2)
		}
		return os.Args[i]
	}
	switch os.Args[1] {
	case "lines": // N numbered lines on stdout, every 10th also on stderr
		n, _ := strconv.Atoi(arg(2))
		for i := 1; i <= n; i++ {
			fmt.Printf("line %d\n", i)
			if i%10 == 0 {
				fmt.Fprintf(os.Stderr, "err %d\n", i)
			}
		}
		fmt.Print("no newline at the end")
	case "exit":
		code, _ := strconv.Atoi(arg(2))
		fmt.Printf("exiting with %d\n", code)
		os.Exit(code)
	case "sleep":
		s, _ := strconv.Atoi(arg(2))
		fmt.Println("sleeping")
		time.Sleep(time.Duration(s) * time.Second)
		fmt.Println("woke up")
	case "cat":
		b, err := os.ReadFile(arg(2))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Stdout.Write(b)
	case "write":
		if err := os.WriteFile(arg(2), []byte("written\n"), 0o644); err != nil {
			fmt.Println("write failed:", err)
			os.Exit(1)
		}
		fmt.Println("write ok")
	case "env":
		fmt.Printf("%s=%s\n", arg(2), os.Getenv(arg(2)))
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Println(wd)
	case "repl": // echo stdin lines until "exit N"
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var code int
			if _, err := fmt.Sscanf(sc.Text(), "exit %d", &code); err == nil {
				os.Exit(code)
			}
			fmt.Println("got:", sc.Text())
		}
	case "-c": // installed as /bin/sh: records each RUN step's command in /probe-sh.log and succeeds
		f, err := os.OpenFile("/probe-sh.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintln(f, arg(2))
		f.Close()
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
}
