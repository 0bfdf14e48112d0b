module libnet/tools/hey

go 1.19

require (
	github.com/rakyll/hey v0.1.4 // indirect
	golang.org/x/net v0.0.0-20181017193950-04a2e542c03f // indirect
	golang.org/x/text v0.3.0 // indirect
)
