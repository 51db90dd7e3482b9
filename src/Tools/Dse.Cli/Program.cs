using Dse.Cli;

using var cancel = new CancellationTokenSource();
Console.CancelKeyPress += (_, e) =>
{
    e.Cancel = true;
    cancel.Cancel();
};

return await CliApplication.RunAsync(args, Console.Out, Console.Error, cancel.Token);
